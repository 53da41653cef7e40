"""Tally gate_ab.py's two runs against the device records (after.jsonl.gz) and the published ones (before.jsonl.gz)."""
import gzip
import json
import sys


def key(r): return (r["grid"], r["goal"], r["seed"], r["goal_set"], r["draw_seed"])
with gzip.open("docs/results/search/level-check/after.jsonl.gz", "rt") as fh:
    dev = {key(r): r for r in map(json.loads, fh)}
with gzip.open("docs/results/search/level-check/before.jsonl.gz", "rt") as fh:
    bef = {key(r): r for r in map(json.loads, fh)}
a = {key(r): r for r in map(json.loads, open(sys.argv[1]))}
b = {key(r): r for r in map(json.loads, open(sys.argv[2]))} if len(sys.argv) > 2 else {}
ks = sorted(set(a) & (set(b) if b else set(a)))
same_dev = sum((a[k]["rows"], a[k]["final"]) == (dev[k]["rows"], dev[k]["final"]) for k in ks)
print(len(ks), "searches; committed here = device record:", same_dev)
def t(D): return f"{sum(D[k]['same_within_noise'] for k in ks)} = truth, {sum(D[k]['same'] for k in ks)} exact, {sum((D[k].get('gap_pct') or 0) > 5 for k in ks)} >5% off, {sum(not any(D[k]['final'].values()) for k in ks)} none, {sum(D[k]['rows'] for k in ks)} rows, {sum(D[k]['phase_rows'].get('check', 0) for k in ks)} check rows"
print(" before the check (published):", t(bef))
print(" committed, here:", t(a))
if b:
    print(" gated, here:    ", t(b))
    for k in ks:
        if (a[k]["same"], a[k]["same_within_noise"]) != (b[k]["same"], b[k]["same_within_noise"]):
            print("  moved", k[0], k[1][:50], "seed", k[2], "draw", k[4], a[k]["same"], a[k]["rows"], "->", b[k]["same"], b[k]["rows"], b[k]["answer"])
