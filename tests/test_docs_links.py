"""The README a newcomer reads stays short, and every relative link in it and under docs/ leads somewhere.

A link is markdown's `[text](target)` (an optional `"title"` after the target is ignored); targets with a scheme
(https:, mailto:) or only an anchor (#section) are not files and are skipped. `path#anchor` must name an existing
file or folder (the anchor itself is not checked: GitHub and other renderers spell heading anchors differently).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from repo_paths import REPO

README_MAX_BYTES = 8192
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~)")


def is_captured_report(path: Path) -> bool:
    """A summary page `edgebench report` wrote, kept verbatim under docs/results/ as a measured artifact: its links
    point into the report folder it came from, of which only excerpts were kept. Not documentation to fix."""
    head = path.read_text(encoding="utf-8")[:200]
    return head.startswith("# edgebench report\n") and " by edgebench " in head


def documents() -> list[Path]:
    docs = [p for p in sorted((REPO / "docs").rglob("*.md")) if not is_captured_report(p)]
    return [REPO / "README.md", *docs]


def link_targets(text: str) -> list[str]:
    """Link and image targets outside fenced code blocks and inline code."""
    out: list[str] = []
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if fenced:
            continue
        prose = re.sub(r"`[^`]*`", "", line)
        out += LINK.findall(prose) + IMAGE.findall(prose)
    return out


def is_relative(target: str) -> bool:
    return not (re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#") or target.startswith("//"))


def broken_links(doc: Path) -> list[str]:
    broken = []
    for target in link_targets(doc.read_text(encoding="utf-8")):
        if not is_relative(target):
            continue
        path = target.split("#", 1)[0].split("?", 1)[0]
        resolved = (REPO / path.lstrip("/")) if path.startswith("/") else (doc.parent / path)
        if not resolved.exists():
            broken.append(target)
    return broken


def test_readme_fits_in_8_kib():
    size = (REPO / "README.md").stat().st_size
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes (at most {README_MAX_BYTES}): move detail to docs/"


@pytest.mark.parametrize("doc", documents(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(doc: Path):
    assert broken_links(doc) == [], f"{doc.relative_to(REPO)}: links to nothing"


def test_the_readme_links_into_docs_and_keeps_its_two_commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert "make bench" in text and "make test" in text  # .ci/run runs the README's test command
    assert "edgebench report" in text
    assert sum(1 for t in link_targets(text) if t.startswith("docs/")) >= 5


def test_only_captured_report_pages_are_left_out():
    left_out = [p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md") if is_captured_report(p)]
    assert all(p.startswith("docs/results/") and p.endswith("/summary.md") for p in left_out), left_out


def test_the_checker_finds_a_broken_link_and_ignores_code(tmp_path: Path):
    (tmp_path / "there.md").write_text("x")
    doc = tmp_path / "doc.md"
    doc.write_text("[ok](there.md#a) [gone](missing.md) ![img](nope.png) [web](https://x.org/a) [top](#top)\n"
                   "`[code](not-a-link.md)`\n```\n[fenced](also-not.md)\n```\n")
    assert broken_links(doc) == ["missing.md", "nope.png"]
