"""Totals of a tried kernel's replays (DIR/records.jsonl) against the same searches of the shipped search, as
../tried-2026-11-29b/compare.py prints them (it is run first, unchanged), then how often the surrogate's "95%"
intervals of the configurations left unmeasured at the stop held the grid's rows of them, pooled per grid and
mode, before and after (search_eval's `coverage` field: rows inside, rows, rows beyond the better end).

    python3 docs/results/search/tried-2026-11-30/compare.py docs/results/search/tried-2026-11-30/tied-kernel
"""
import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("compare_29b", HERE.parent / "tried-2026-11-29b" / "compare.py")
base = importlib.util.module_from_spec(spec)
spec.loader.exec_module(base)


def pooled(rs: list[dict]) -> str:
    inside = rows = better = 0
    for r in rs:
        for i, n, b in (r.get("coverage") or {}).values():
            inside, rows, better = inside + i, rows + n, better + b
    return f"{inside / rows:.1%} inside, {better / rows:.1%} beyond the better end ({rows} rows)" if rows else "-"


def main() -> None:
    base.main()
    after = [json.loads(line) for line in (Path(sys.argv[1]) / "records.jsonl").read_text().splitlines() if line]
    before = {base.key(r): r for name in base.BEFORE for r in json.loads((base.SEARCH / name).read_text())}
    print("unmeasured configurations' 95% intervals at the stop (after | before):")
    for mode in ("best", "pareto"):
        mine = [r for r in after if ("Pareto" in r["goal"]) == (mode == "pareto")]
        for grid in sorted({r["grid"] for r in mine}):
            a = [r for r in mine if r["grid"] == grid]
            print(f"  {mode} {grid}: {pooled(a)} | {pooled([before[base.key(r)] for r in a])}")


if __name__ == "__main__":
    main()
