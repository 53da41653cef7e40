"""Totals of a tried change's replays (records.jsonl, one record a line) against the same searches of the shipped
search (the records of docs/results/search/eval.json, refgrid/fixed and refgrid-resnet18/fixed and drawn: the search
as of commit 31cd439 for these goals): per goal set, mode and grid, (searches, answer = truth, exact, median and
largest share of rows, rows in all), and every search whose verdict moved.

    python3 docs/results/search/tried-2026-11-29b/compare.py docs/results/search/tried-2026-11-29b/level-at-two-points
"""
import json
import statistics
import sys
from pathlib import Path

SEARCH = Path(__file__).resolve().parent.parent
BEFORE = ["eval.json", "refgrid/fixed/eval.json", "refgrid-resnet18/fixed/eval.json", "refgrid-resnet18/drawn/eval.json"]


def key(r: dict) -> tuple:
    return r["grid"], r["goal"], r["seed"], r["goal_set"], r["surrogate"]


def totals(rs: list[dict]) -> str:
    shares = [r["rows"] / r["grid_rows"] for r in rs]
    return (f"{len(rs)} searches, {sum(r['same_within_noise'] for r in rs)} = truth, {sum(r['same'] for r in rs)} exact, "
            f"rows median {statistics.median(shares):.1%} (max {max(shares):.1%}), {sum(r['rows'] for r in rs)} in all")


def main() -> None:
    after = [json.loads(line) for line in (Path(sys.argv[1]) / "records.jsonl").read_text().splitlines() if line]
    before = {key(r): r for name in BEFORE for r in json.loads((SEARCH / name).read_text())}
    for goal_set in ("fixed", "drawn"):
        for mode in ("best", "pareto"):
            mine = [r for r in after if r["goal_set"] == goal_set and ("Pareto" in r["goal"]) == (mode == "pareto")]
            for grid in sorted({r["grid"] for r in mine}) + ["the 4 small grids"]:
                a = [r for r in mine if r["grid"] == grid or (grid.startswith("the 4") and "refgrid" not in r["grid"])]
                if not a:
                    continue
                b = [before[key(r)] for r in a]
                print(f"{goal_set} {mode} {grid}: after {totals(a)} | before {totals(b)}")
    print("verdicts that moved (exact, = truth; before -> after):")
    for r in after:
        b = before[key(r)]
        if (b["same"], b["same_within_noise"]) != (r["same"], r["same_within_noise"]):
            print(f"  {r['grid']} {r['goal']} seed {r['seed']}: {b['same']}, {b['same_within_noise']} ({b['rows']} rows) -> "
                  f"{r['same']}, {r['same_within_noise']} ({r['rows']} rows)")


if __name__ == "__main__":
    main()
