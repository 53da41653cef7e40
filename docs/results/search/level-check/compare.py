"""The level check's replays against the search before it, search by search (gp, best-under-limits goals):

- before.jsonl.gz: the records published before the check (commit d8e3e2a: docs/results/search/eval.json's gp best
  records, drawn-seed-1/eval.json, refgrid/{fixed,drawn}, refgrid-resnet18/{fixed,drawn}), all replayed on the
  H200 machine's CPU cores;
- after.jsonl.gz: the same searches with the check, replayed there by device-replay.sh (2026-11-30);
- off-device.jsonl.gz: 680 of the searches replayed there the same day without the check, to show that a replay
  there gives the published records (same rows, same answer) and the comparison is of the check, not the machine;
- replayed here (2 cores, numpy 2.4.6): local-off-fixed (the 60 fixed best searches without the check),
  local-gated-fixed (with change.diff's check) and local-committed-fixed (commit e574315's form);
  loglinear-off-local and loglinear-after (loglinear's 1,060 best searches without and with the check).

    python3 docs/results/search/level-check/compare.py
"""
import gzip
import json
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load(name: str) -> dict[tuple, dict]:
    with gzip.open(HERE / name, "rt") as fh:
        rs = [json.loads(line) for line in fh if line.strip()]
    return {(r["grid"], r["goal"], r["seed"], r["goal_set"], r["draw_seed"]): r for r in rs}


def totals(rs: list[dict]) -> str:
    shares = [r["rows"] / r["grid_rows"] for r in rs]
    off = sum((r.get("gap_pct") or 0.0) > 5 for r in rs)
    none = sum(not any(r["final"].values()) for r in rs)
    return (f"{sum(r['same_within_noise'] for r in rs)} = truth, {sum(r['same'] for r in rs)} exact, {off} > 5% off, "
            f"{none} 'no answer', rows median {statistics.median(shares):.1%}, {sum(r['rows'] for r in rs)} in all")


def main() -> None:
    before, after, off = load("before.jsonl.gz"), load("after.jsonl.gz"), load("off-device.jsonl.gz")
    assert set(before) == set(after), "the same searches"
    same = [k for k in off if (off[k]["rows"], off[k]["final"]) == (before[k]["rows"], before[k]["final"])]
    print(f"replayed without the check on the device: {len(same)} of {len(off)} give the published rows and answer")
    small = ("h100-torch", "h200-ort", "h200-instances", "cpu-small_cnn")
    sets = [("fixed sets", lambda k: k[3] == "fixed" and k[0] in small),
            ("drawn sets, draw seed 0", lambda k: k[3] == "drawn" and k[4] == 0 and k[0] in small),
            ("held-out draw (draw seed 1)", lambda k: k[3] == "drawn" and k[4] == 1),
            ("reference-shape grids, fixed", lambda k: k[3] == "fixed" and k[0] not in small),
            ("reference-shape grids, drawn", lambda k: k[3] == "drawn" and k[0] not in small)]
    for name, pick in sets:
        keys = sorted(k for k in before if pick(k))
        for grid in sorted({k[0] for k in keys}) + ["all"]:
            ks = [k for k in keys if grid in ("all", k[0])]
            print(f"{name}, {grid}, {len(ks)} searches:\n  before {totals([before[k] for k in ks])}\n"
                  f"  after  {totals([after[k] for k in ks])}")
    print("searches whose verdict moved (exact, = truth, gap to the grid's best; rows):")
    for k in sorted(before):
        b, a = before[k], after[k]
        if (b["same"], b["same_within_noise"]) != (a["same"], a["same_within_noise"]):
            print(f"  {k[0]} {k[1]} seed {k[2]} (draw seed {k[4]}): {b['same']}, {b['same_within_noise']}, "
                  f"{b.get('gap_pct')} ({b['rows']} rows) -> {a['same']}, {a['same_within_noise']}, {a.get('gap_pct')} "
                  f"({a['rows']} rows); answer {b['answer']} -> {a['answer']}")
    changed = [k for k in before if (before[k]["rows"], before[k]["final"]) != (after[k]["rows"], after[k]["final"])]
    quiet = [k for k in before if not after[k]["phase_rows"].get("check")]
    print(f"searches whose rows or answer changed: {len(changed)}, of them with a check row: "
          f"{sum(1 for k in changed if after[k]['phase_rows'].get('check'))}; searches with no check row: {len(quiet)}, "
          f"of them with the published rows and answer: {sum(1 for k in quiet if k not in changed)}")
    here_off = load("local-off-fixed.jsonl.gz")
    moved = [k for k in here_off if (here_off[k]["rows"], here_off[k]["final"]) != (before[k]["rows"], before[k]["final"])]
    print(f"here, without the check, fixed best: {len(moved)} of {len(here_off)} differ from the published records in "
          f"rows or answer, {sum(here_off[k]['final'] != before[k]['final'] for k in here_off)} in the answer")
    gated, committed = load("local-gated-fixed.jsonl.gz"), load("local-committed-fixed.jsonl.gz")
    same = sum(1 for k in gated if {a: b for a, b in gated[k].items() if a != "wall_s"}
               == {a: b for a, b in committed[k].items() if a != "wall_s"})
    print(f"here, change.diff's check against commit e574315's: {same} of {len(gated)} records the same but wall_s")
    ll_off, ll_pub = load("loglinear-off-local.jsonl.gz"), load("loglinear-published.jsonl.gz")
    same = sum(1 for k in ll_off if (ll_off[k]["rows"], ll_off[k]["final"]) == (ll_pub[k]["rows"], ll_pub[k]["final"]))
    print(f"here, loglinear without the check: {same} of {len(ll_off)} give the published rows and answer")
    fired = sum(1 for r in after.values() if r["phase_rows"].get("check"))
    rows = sum(r["phase_rows"].get("check", 0) for r in after.values())
    print(f"searches in which the check measured a row: {fired} of {len(after)} ({rows} check rows in all)")


if __name__ == "__main__":
    main()
