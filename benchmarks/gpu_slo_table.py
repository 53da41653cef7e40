"""The last table of benchmarks/gpu_slo.sh: every SLO search of one run folder side by side.

Finished searches come from slo_search.csv. A search the script's time budget cut (no slo_search.csv line)
is rebuilt from its probe rows in results.csv and marked `incomplete`: the most streams that met and the
fewest that missed so far, so a cut run still says what it measured.

    python3 benchmarks/gpu_slo_table.py RUN_DIR
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path


def _read(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _verdict(row: dict[str, str]) -> str:
    if row.get("status") == "skipped":
        return "skipped"
    return row.get("slo_verdict") or {"true": "met", "false": "missed"}.get(row.get("slo_met", ""), "?")


def _p99(text: str | None) -> str:
    return f"{float(text):.3g}" if text not in (None, "") else "-"


def searches(run_dir: Path) -> list[dict[str, str]]:
    """One dict per (options, gpu_sharing) in the order the probes ran: the slo_search.csv line when the search
    finished, else one rebuilt from its probes (answer 'incomplete: ...')."""
    done = {(s.get("options", ""), s.get("gpu_sharing", "")): s for s in _read(run_dir / "slo_search.csv")}
    probes: dict[tuple[str, str], list[dict[str, str]]] = {}
    for row in _read(run_dir / "results.csv"):
        if row.get("scenario") != "slo-search":
            continue
        key = (row.get("options", ""), row.get("gpu_sharing") or "time-slicing")
        probes.setdefault(key, []).append(row)
    out = []
    for key in dict.fromkeys([*probes, *done]):
        if key in done:
            out.append(done[key])
            continue
        rows = probes[key]
        met = [int(r["instances"]) for r in rows if _verdict(r) == "met"]
        missed = [int(r["instances"]) for r in rows if _verdict(r) in ("missed", "failed")]
        at_max = next((r for r in rows if met and int(r["instances"]) == max(met)), {})
        first = next((r for r in rows if missed and int(r["instances"]) == min(missed)), {})
        out.append({"options": key[0], "gpu_sharing": key[1],
                    "answer": f"incomplete: met up to {max(met) if met else 0}"
                              + (f", missed at {min(missed)}" if missed else ""),
                    "p99_ms_at_max": at_max.get("latency_ms_p99", ""),
                    "first_missed_streams": str(min(missed)) if missed else "",
                    "p99_ms_at_first_miss": first.get("latency_ms_p99", ""), "monotonic": "?",
                    "notes": "cut by the script's time budget",
                    "probes": ", ".join(f"{r['instances']}:{_verdict(r)} p99={_p99(r.get('latency_ms_p99'))}"
                                        for r in rows)})
    return out


def table(run_dir: Path) -> str:
    found = searches(run_dir)
    if not found:
        return f"no SLO search in {run_dir} (no slo_search.csv line, no slo-search row)"
    head = ("options", "sharing", "max streams under SLO", "p99 ms at max", "first miss", "p99 ms there", "monotonic")
    body = [(s.get("options") or "eager (default)", s.get("gpu_sharing") or "time-slicing", s.get("answer", ""),
             _p99(s.get("p99_ms_at_max")), s.get("first_missed_streams") or "-", _p99(s.get("p99_ms_at_first_miss")),
             s.get("monotonic", "")) for s in found]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths)) for b in body]
    for s in found:
        name = f"{s.get('options') or 'eager (default)'} / {s.get('gpu_sharing') or 'time-slicing'}"
        lines.append(f"  {name}: probes {s.get('probes', '')}")
        if s.get("notes"):
            lines.append(f"  {name}: {s['notes']}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(Path(sys.argv[1])))
