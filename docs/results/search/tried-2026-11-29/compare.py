"""Totals of a tried change's replays against the same searches of the shipped search (records of
benchmarks/search_eval.py): per goal set and grid, (searches, answer = truth, exact, median share of rows, rows in
all). `after` is an eval.json or a records.jsonl (one record a line); `before` defaults to ../uncalibrated/eval.json (the search these changes were tried on, commit 743d627).

    python3 docs/results/search/tried-2026-11-29/compare.py docs/results/search/tried-2026-11-29/joint-p-any/eval.json
"""
import json
import statistics
import sys
from pathlib import Path


def load(path: str) -> list[dict]:
    text = Path(path).read_text()
    return json.loads(text) if text.lstrip().startswith("[") else [json.loads(ln) for ln in text.splitlines() if ln]


def totals(rs: list[dict]) -> str:
    if not rs:
        return "-"
    share = statistics.median(r["rows"] / r["grid_rows"] for r in rs)
    return (f"{len(rs)} searches, {sum(r['same_within_noise'] for r in rs)} = truth, {sum(r['same'] for r in rs)} exact, "
            f"rows median {share:.1%}, {sum(r['rows'] for r in rs)} in all")


def main() -> None:
    after = load(sys.argv[1])
    before_path = sys.argv[2] if len(sys.argv) > 2 else str(Path(__file__).resolve().parent.parent / "uncalibrated" / "eval.json")
    key = lambda r: (r["grid"], r["goal"], r["seed"], r["goal_set"], r["surrogate"])  # noqa: E731
    before = {key(r): r for r in load(before_path)}
    for goal_set in ("fixed", "drawn"):
        for mode in ("best", "pareto"):
            rs = [r for r in after if r["goal_set"] == goal_set and r["mode"] == mode and key(r) in before]
            if not rs:
                continue
            print(f"{goal_set} {mode}: after {totals(rs)} | before {totals([before[key(r)] for r in rs])}")
            for grid in sorted({r["grid"] for r in rs}):
                g = [r for r in rs if r["grid"] == grid]
                print(f"    {grid}: after {totals(g)} | before {totals([before[key(r)] for r in g])}")


if __name__ == "__main__":
    main()
