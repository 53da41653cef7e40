"""The tables of README.md from the records in this folder (run from the repository root):

    python3 docs/results/search/no-answer-stop/compare.py > docs/results/search/no-answer-stop/compare.txt

1. The tight sets (draw seed 2, thresholds at quantiles 0-0.3), gp, seeds 0-4, three searches on one machine (the
   H200 machine's CPU cores): `0.05` (the stop with no answer at P < 0.05, as before), `0.01` (at P < 0.01 alone),
   `design` (the committed search: P < 0.01, and the design finished before a stop with no answer). Per grid and
   in all: searches, sets no configuration meets (truth: no answer), answers = truth, exact, wrong "no answer",
   rows (in all, in the sets with an answer, in the sets with none), and the median share of the grid's rows; then
   every search whose rows or answer moved from `0.05` to `design`.
2. The published records the change can move: every other search keeps its rows and answer (a search moves only
   if, before, it stopped with no answer), shown by replaying the published sets and listing what differs. The
   published records are ../eval.json as it was before records.py put the replays in its place: that file, with
   the 13 records records.py replaced taken from published-before.jsonl.gz (commit 2cf5b14's).
"""
from __future__ import annotations

import gzip
import json
import statistics
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
GRIDS = ("h100-torch", "h200-ort", "h200-instances", "cpu-small_cnn")
RUNS = ("0.05", "0.01", "design")


def load(name: str) -> list[dict]:
    with gzip.open(HERE / name, "rt") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def key(r: dict) -> tuple:
    return r["grid"], r["goal"], r["seed"], r["surrogate"]


def none(r: dict) -> bool:
    return not any(r["truth"].values())


def row(label: str, rs: list[dict]) -> str:
    c = Counter()
    for r in rs:
        c["none"] += none(r)
        c["right"] += r["same_within_noise"]
        c["exact"] += r["same"]
        c["wrong_none"] += "no answer" in (r["stop"] or "") and not none(r)
        c["rows_some" if not none(r) else "rows_none"] += r["rows"]
    median = statistics.median(r["rows"] / r["grid_rows"] for r in rs)
    return (f"| {label} | {len(rs)} | {c['none']} | {c['right']} ({c['right'] / len(rs):.1%}) | {c['exact']} | "
            f"{c['wrong_none']} | {c['rows_some'] + c['rows_none']:,} | {c['rows_some']:,} | {c['rows_none']:,} | "
            f"{median:.1%} |")


def tight() -> None:
    print("## Tight sets (draw seed 2, quantiles 0-0.3), gp, seeds 0-4, on the H200 machine's CPU cores\n")
    print("| grid, search | searches | searches, no answer in the grid | answer = truth | exact | wrong \"no answer\" | "
          "rows | rows, sets with an answer | rows, sets with none | rows: median share |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    runs = {(run, g): load(f"tight-{run}-{g}.jsonl.gz") for run in RUNS for g in GRIDS}
    for g in GRIDS:
        for run in RUNS:
            print(row(f"{g}, {run}", runs[run, g]))
    for run in RUNS:
        print(row(f"**all, {run}**", [r for g in GRIDS for r in runs[run, g]]))
    print("\nMoved from 0.05 to design (grid, goal, seed: rows, answer; truth):\n")
    for g in GRIDS:
        before = {key(r): r for r in runs["0.05", g]}
        for r in runs["design", g]:
            b = before[key(r)]
            if (b["rows"], b["answer"]) != (r["rows"], r["answer"]):
                verdict = ("now right" if r["same_within_noise"] and not b["same_within_noise"] else
                           "now wrong" if b["same_within_noise"] and not r["same_within_noise"] else
                           "right both" if r["same_within_noise"] else "wrong both")
                print(f"- {g} {r['goal']} seed {r['seed']}: {b['rows']} -> {r['rows']} rows, "
                      f"{_names(b['answer'])} -> {_names(r['answer'])}; truth {_names(r['truth'])} ({verdict})")


def _names(answer: dict) -> str:
    names = [n for ks in answer.values() for n in ks]
    return ", ".join(names) if names else "no answer"


def published() -> None:
    print("\n## The published records replayed with the committed search\n")
    pub = {key(r): r for r in json.loads((HERE.parent / "eval.json").read_text())}
    pub.update({key(r): r for r in load("published-before.jsonl.gz")})
    for name, what in (("draw0-design-h100-torch.jsonl.gz", "H100 drawn sets (draw seed 0), gp, H200 machine"),
                       ("fixed-design.jsonl.gz", "fixed best goals of the four small grids, gp, H200 machine"),
                       ("draw0-design-h100-torch-loglinear-here.jsonl.gz",
                        "H100 drawn sets (draw seed 0), loglinear, replayed here (2 cores)")):
        rs = load(name)
        moved = [(pub[key(r)], r) for r in rs
                 if (pub[key(r)]["rows"], pub[key(r)]["answer"], pub[key(r)]["stop"]) != (r["rows"], r["answer"],
                                                                                           r["stop"])]
        print(f"{what}: {len(rs)} searches, {len(rs) - len(moved)} with the published rows, answer and stop line")
        for b, r in moved:
            was = "stopped with no answer" if "no answer" in b["stop"] else "stopped with an answer"
            print(f"- {r['goal']} seed {r['seed']} ({was}): {b['rows']} -> {r['rows']} rows, "
                  f"{_names(b['answer'])} -> {_names(r['answer'])}; truth {_names(r['truth'])}; "
                  f"right {b['same_within_noise']} -> {r['same_within_noise']}")


if __name__ == "__main__":
    tight()
    published()
