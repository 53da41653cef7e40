"""The last table of benchmarks/gpu_slo.sh: every SLO search of one run folder side by side.

Finished searches come from slo_search.csv. A search the script's time budget cut (no slo_search.csv line)
is rebuilt from its probe rows in results.csv and marked `incomplete`: the most streams that met and the
fewest that missed so far, so a cut run still says what it measured.

    python3 benchmarks/gpu_slo_table.py RUN_DIR
    python3 benchmarks/gpu_slo_table.py --arrivals --slo-repeats R RUN_DIR...   # gpu_slo.sh arrivals

--arrivals: one line per arrival model x options x sharing over run folders of `gpu_slo.sh arrivals` (one folder
per arrival model, each search repeated: slo_search.csv's `search`), with the N each search found, the first N that
failed and each repeat's p99 there and at N; a search the budget cut is rebuilt from its probe rows (repeat // R is
its search, a count met only when all R repeats met) and marked incomplete.
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


def _repeat_p99s(rows: list[dict[str, str]]) -> str:
    return "/".join(_p99(r.get("latency_ms_p99")) for r in sorted(rows, key=lambda r: int(r.get("repeat") or 0)))


def arrival_searches(run_dir: Path, slo_repeats: int) -> list[dict[str, str]]:
    """Every search of one `gpu_slo.sh arrivals` run folder: its slo_search.csv line, or one rebuilt from its probe
    rows (answer 'incomplete ...'), each with arrival, options, gpu_sharing, search, answer, first_missed_streams,
    p99 per repeat at the answer and at the first miss ('/'-joined)."""
    rows = [r for r in _read(run_dir / "results.csv") if r.get("scenario") == "slo-search"]
    done = {(s.get("options", ""), s.get("gpu_sharing") or "time-slicing", s.get("search") or "0"): s
            for s in _read(run_dir / "slo_search.csv")}
    probes: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for row in rows:
        key = (row.get("options", ""), row.get("gpu_sharing") or "time-slicing",
               str(int(row.get("repeat") or 0) // max(1, slo_repeats)))
        probes.setdefault(key, []).append(row)
    out = []
    for key in dict.fromkeys([*probes, *done]):
        mine = probes.get(key, [])
        arrival = next((r.get("arrival", "") for r in mine), "")
        if key in done:
            s = done[key]
            out.append({"arrival": s.get("arrival") or arrival, "options": key[0], "gpu_sharing": key[1],
                        "search": key[2], "answer": s.get("answer", ""),
                        "first_missed_streams": s.get("first_missed_streams", ""),
                        "at_max": (s.get("p99_ms_repeats_at_max") or "").replace(";", "/"),
                        "at_miss": (s.get("p99_ms_repeats_at_first_miss") or "").replace(";", "/"),
                        "probes": s.get("probes", "")})
            continue
        by_n: dict[int, list[dict[str, str]]] = {}
        for r in mine:
            by_n.setdefault(int(r["instances"]), []).append(r)
        met = [n for n, rs in by_n.items() if len(rs) >= slo_repeats and all(_verdict(r) == "met" for r in rs)]
        missed = [n for n, rs in by_n.items() if any(_verdict(r) in ("missed", "failed") for r in rs)]
        out.append({"arrival": arrival, "options": key[0], "gpu_sharing": key[1], "search": key[2],
                    "answer": f"incomplete: met up to {max(met) if met else 0}"
                              + (f", missed at {min(missed)}" if missed else ""),
                    "first_missed_streams": str(min(missed)) if missed else "",
                    "at_max": _repeat_p99s(by_n[max(met)]) if met else "",
                    "at_miss": _repeat_p99s(by_n[min(missed)]) if missed else "",
                    "probes": ", ".join(f"{r['instances']}:{_verdict(r)} p99={_p99(r.get('latency_ms_p99'))}"
                                        for r in mine)})
    return out


def spread(answers: list[str]) -> str:
    """'same N each time', 'N from a to b' (numeric answers), or '-' with fewer than two finished searches."""
    nums = [int(a) for a in answers if a.isdigit()]
    if len(nums) < 2:
        return "-"
    return "same N each time" if len(set(nums)) == 1 else f"N from {min(nums)} to {max(nums)}"


def arrival_table(run_dirs: list[Path], slo_repeats: int) -> str:
    found = [s for d in run_dirs for s in arrival_searches(d, slo_repeats)]
    if not found:
        return "no SLO search in " + ", ".join(map(str, run_dirs))
    groups: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for s in found:
        groups.setdefault((s["arrival"], s["options"] or "eager (default)", s["gpu_sharing"]), []).append(s)
    head = ("arrival", "options", "sharing", "N per search", "first failed N", "spread")
    body = [(a, o, g, " | ".join(s["answer"] for s in ss), " | ".join(s["first_missed_streams"] or "-" for s in ss),
             spread([s["answer"] for s in ss])) for (a, o, g), ss in groups.items()]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths)) for b in body]
    lines.append(f"p99 ms of each repeat ({slo_repeats} per count; a count stops at its first repeat over the SLO):")
    for (a, o, g), ss in groups.items():
        for s in ss:
            lines.append(f"  {a} / {o} / {g}, search {int(s['search']) + 1}: N={s['answer']} p99 {s['at_max'] or '-'}"
                         f"; first failed {s['first_missed_streams'] or '-'} p99 {s['at_miss'] or '-'}"
                         f"; probes {s['probes']}")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] == "--arrivals":
        args = sys.argv[2:]
        repeats = 1
        if args and args[0] == "--slo-repeats":
            repeats, args = int(args[1]), args[2:]
        print(arrival_table([Path(a) for a in args], repeats))
    else:
        print(table(Path(sys.argv[1])))
