"""summary.html rendered in a real headless browser (Debian's chromium; `make test-deps` installs it as root):
it opens with the answer, loads with no console error, every image (embedded, data: URIs) decodes, and a
screenshot is kept (in the test's tmp folder, and in $EDGEBENCH_SCREENSHOT_DIR when set).

The checks run in the page: a probe script, put first into a copy of the page, records every error event
(scripts and resources), every console.error and, on load, each image's complete/naturalWidth, and writes them
into the DOM that `chromium --dump-dom` prints. A page with a broken image is checked too: the probe must see it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_report_tables import make_run, row

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser")) if p), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (make test-deps installs Debian's "
                                                          "chromium as root; apt-get install chromium)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--virtual-time-budget=5000"]
PROBE = """<script>
window.__errors = [];
window.addEventListener('error', function (e) {
  var t = e.target && e.target !== window ? e.target.tagName + ' ' + (e.target.getAttribute('data-file') || '') : '';
  window.__errors.push(e.message ? 'error: ' + e.message : 'resource failed to load: ' + t);
}, true);
var _ce = console.error;
console.error = function () { window.__errors.push('console.error: ' + Array.prototype.join.call(arguments, ' '));
                              _ce.apply(console, arguments); };
window.addEventListener('load', function () {
  var imgs = Array.prototype.map.call(document.images, function (i) {
    return {file: i.getAttribute('data-file') || i.src.slice(0, 40), complete: i.complete, width: i.naturalWidth}; });
  var pre = document.createElement('pre'); pre.id = '__probe';
  pre.textContent = JSON.stringify({errors: window.__errors, images: imgs});
  document.body.appendChild(pre);
});
</script>"""


def _chromium(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, *FLAGS, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "HOME": os.environ.get("HOME", "/tmp")})


def probe(page: Path, work: Path) -> dict:
    """What the probe script saw when chromium loaded `page` (a copy with the probe put first)."""
    copy = work / f"probed-{page.name}"
    copy.write_text(page.read_text().replace("<head>", "<head>" + PROBE, 1))
    out = _chromium("--dump-dom", copy.as_uri())
    found = re.search(r'<pre id="__probe">(.*?)</pre>', out.stdout, re.S)
    assert found, f"the probe wrote nothing: chromium rc {out.returncode}, stderr {out.stderr[-800:]}"
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                      .replace("&gt;", ">"))


def _report(tmp_path: Path) -> Path:
    pytest.importorskip("matplotlib", reason="figures need matplotlib (pip install 'edgebench[report]')")
    from edgebench.report.summary import build_report

    rows = []
    for rep, (f32, i8) in enumerate([(100.0, 210.0), (104.0, 200.0), (98.0, 205.0)]):
        rows += [row(2 * rep, "fp32", 1, f32, repeat=rep, config_hash=f"a{rep}", energy=50.0 + rep,
                     power_w_mean=5.0, power_scope="cpu-package"),
                 row(2 * rep + 1, "int8", 1, i8, repeat=rep, config_hash=f"b{rep}", energy=25.0 + rep,
                     power_w_mean=5.2, power_scope="cpu-package")]
    rows.append(row(6, "fp32", 4, 300.0, "invalid", "throughput unstable across 5 sub-windows: 30% from the mean",
                    repeat=0, config_hash="c0", energy=40.0))
    run = make_run(tmp_path / "run", rows)
    rep = build_report([run], tmp_path / "rep", max_timelines=0, formats=("png",))
    assert rep.summary_html is not None
    return rep.summary_html


def test_summary_html_renders_with_no_console_error_and_every_image_loaded(tmp_path: Path):
    page = _report(tmp_path)
    text = page.read_text()
    # self-contained: images embedded, and the answer comes before anything else
    assert 'src="data:image/png;base64,' in text and 'src="figures/' not in text
    assert text.index("The answer: best configuration per model") < text.index("Runs</h2>")
    assert "ort int8 b1 cpu" in text.split("Runs</h2>")[0]  # int8 is the best by throughput and by energy

    seen = probe(page, tmp_path)
    assert seen["errors"] == []
    assert len(seen["images"]) >= 3  # the Pareto front and the paper figures at least
    assert all(img["complete"] and img["width"] > 0 for img in seen["images"]), seen["images"]

    shot = tmp_path / "summary.png"
    out = _chromium("--enable-logging=stderr", "--v=0", "--window-size=1200,3000", f"--screenshot={shot}",
                    page.as_uri())
    console = [line for line in out.stderr.splitlines() if "CONSOLE" in line]
    assert console == [], console  # nothing logged to the console by the page itself
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    keep = os.environ.get("EDGEBENCH_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / "summary.png")


def test_the_probe_sees_a_broken_image(tmp_path: Path):
    page = tmp_path / "broken.html"
    page.write_text('<!doctype html>\n<html><head><meta charset="utf-8"><title>t</title></head><body>'
                    '<img src="data:image/png;base64,AAAA" data-file="broken.png"></body></html>\n')
    seen = probe(page, tmp_path)
    assert seen["images"] == [{"file": "broken.png", "complete": True, "width": 0}]
    assert seen["errors"] == ["resource failed to load: IMG broken.png"]
