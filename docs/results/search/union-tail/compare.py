"""Totals of two search_eval eval.json files of the same searches (stopvariant.py's two runs), per grid and in
all: searches, answer = truth, exact, rows, median share of the grid's rows; then every search whose verdict moved.

    python3 docs/results/search/union-tail/compare.py A/eval.json B/eval.json   (or the .json.gz kept here)
"""
import gzip
import json
import statistics
import sys

a, b = (json.load(gzip.open(p, "rt") if p.endswith(".gz") else open(p)) for p in sys.argv[1:3])


def key(r):
    return r["grid"], r["goal"], r["seed"]


A, B = {key(r): r for r in a}, {key(r): r for r in b}
assert A.keys() == B.keys(), "not the same searches"
print("| grid | searches | = truth (A -> B) | exact | rows | median share |")
print("| --- | ---: | --- | --- | --- | --- |")
for grid in sorted({k[0] for k in A}) + ["all"]:
    ks = [k for k in A if grid in ("all", k[0])]

    def tot(d, f):
        return sum(f(d[k]) for k in ks)

    def med(d):
        return statistics.median(d[k]["rows"] / d[k]["grid_rows"] for k in ks)

    print(f"| {grid} | {len(ks)} | {tot(A, lambda r: r['same_within_noise'])} -> {tot(B, lambda r: r['same_within_noise'])} "
          f"| {tot(A, lambda r: r['same'])} -> {tot(B, lambda r: r['same'])} | {tot(A, lambda r: r['rows'])} -> "
          f"{tot(B, lambda r: r['rows'])} | {med(A):.1%} -> {med(B):.1%} |")
print()
for k in sorted(A):
    x, y = A[k], B[k]
    if (x["same_within_noise"], x["same"]) != (y["same_within_noise"], y["same"]):
        print(f"- {k[0]} / {k[1]} / seed {k[2]}: {x['answer']} ({x['rows']} rows, gap {x['gap_pct']}) -> "
              f"{y['answer']} ({y['rows']} rows, gap {y['gap_pct']}); truth {x['truth']}")
