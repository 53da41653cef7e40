"""Put the level check's replays in place of the published best-goal records, and re-render each eval.md (its
line 3, the command and where the records come from, is given here). Pareto records are kept as they were: the
check is best mode only. Run once from the repository root (idempotent):

    python3 docs/results/search/level-check/records.py

- gp, best goals, the small grids' fixed sets and drawn sets (draw seeds 0 and 1) and both reference-shape grids:
  after.jsonl.gz (device-replay.sh, the H200 machine's CPU cores, where the published records were made);
- loglinear, best goals, the small grids: loglinear-after.jsonl.gz (replayed here, `--jobs 2`: the records before
  the check replayed here gave the published ones in 1,060 of 1,060);
- fixed-15-seeds/eval.json: device-final.sh's replay of the committed search, copied in place in full (this script
  only re-renders its eval.md);
- synthetic/42-84-fixed: synthetic-42-84-after.jsonl.gz (replayed here, as the published ones were).
"""
import contextlib
import gzip
import io
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEARCH = HERE.parent
sys.path[:0] = [str(SEARCH.parents[2] / "benchmarks"), str(SEARCH.parents[2])]
import search_eval  # noqa: E402


def check(up: str) -> str:
    return f"the best-goal records replayed with the level check, commit e574315: [level-check]({up}level-check/README.md)"


def after(name: str) -> dict[tuple, dict]:
    with gzip.open(HERE / name, "rt") as fh:
        rs = [json.loads(line) for line in fh if line.strip()]
    out = {}
    for r in rs:
        seed = r.pop("draw_seed")
        out[(r["grid"], r["goal"], r["seed"], r["goal_set"], r["surrogate"], seed)] = r
    return out


def rebuild(folder: str, draw_seed: int, new: dict[tuple, dict] | None, line3: str, notes: str | None = None) -> None:
    """`new`: the replays to put in place of the folder's best records (None: its eval.json as it is)."""
    path = SEARCH / folder / "eval.json"
    records = json.loads(path.read_text())
    out = []
    for r in records:
        k = (r["grid"], r["goal"], r["seed"], r["goal_set"], r["surrogate"], draw_seed)
        if r["mode"] == "best" and new is not None:
            # a best record with no replay is an error: every one was replayed. The streamed records leave out the
            # goal's truth and limits (the same for every search of a goal): those of the record it replaces
            rec = new[k]
            assert set(rec) | {"truth", "limits"} == set(r), (k, set(rec) ^ set(r))
            out.append({key: rec.get(key, r[key]) for key in r})
        else:
            out.append(r)
    path.write_text(json.dumps(out, indent=1, default=str))
    command = line3[1:-1]  # the header wraps it in backticks; the first and last are added back
    with contextlib.redirect_stdout(io.StringIO()):
        search_eval.write_out(out, str(SEARCH / folder), notes, command)
    md = SEARCH / folder / "eval.md"
    lines = md.read_text().split("\n")
    lines[2] = line3
    md.write_text("\n".join(lines))


def main() -> None:
    gp = after("after.jsonl.gz")
    new = {**gp, **after("loglinear-after.jsonl.gz"), **after("synthetic-42-84-after.jsonl.gz")}
    rebuild(".", 0, new, "`PYTHONPATH=$PWD .venv/bin/python benchmarks/search_eval.py --seeds 5 --surrogates "
            "gp,loglinear --drawn 50 --jobs 16 --out docs/results/search --notes docs/results/search/eval-notes.md` "
            "(the best goals: commit e574315's search, the level check; gp on the 16 CPU cores of the H200 machine, "
            "loglinear here, which gave the published records before the check in 1,060 of 1,060: "
            "[level-check](level-check/README.md). The Pareto records: commit d953b4b's search (gp from "
            "[pareto-noise/after-15-seeds](pareto-noise/after-15-seeds/eval.md), seeds 0-4; loglinear replayed with "
            "`--goals Pareto --seeds 5 --surrogates loglinear --jobs 16`). The tables rendered with `--render "
            "docs/results/search/eval.json`: see the last two notes)",
            str(SEARCH / "eval-notes.md"))
    rebuild("drawn-seed-1", 1, gp, "`PYTHONPATH=$PWD .venv/bin/python benchmarks/search_eval.py --seeds 5 --surrogates "
            "gp --drawn 50 --draw-seed 1 --no-fixed --jobs 16 --out docs/results/search/drawn-seed-1` (commit "
            f"e574315, on the 16 CPU cores of the H200 machine; {check('../')})")
    for grid, folder, jobs in (("h200-refgrid", "refgrid", 2), ("h200-refgrid-r18", "refgrid-resnet18", 16)):
        csv = f"docs/results/search/{folder}/results.csv"
        pareto = (" The Pareto records (seeds 0-4) from commit d953b4b's search in ../../pareto-noise/after-15-seeds, "
                  "put in their place." if folder == "refgrid" else "")
        rebuild(f"{folder}/fixed", 0, gp, f"`PYTHONPATH=$PWD .venv/bin/python benchmarks/search_eval.py --grids "
                f"{grid}={csv} --seeds 5 --surrogates gp --jobs {jobs} --out docs/results/search/{folder}/fixed` "
                f"({check('../../')}, on the 16 CPU cores of the H200 machine.{pareto} Rendered with `--render`)")
        rebuild(f"{folder}/drawn", 0, gp, f"`PYTHONPATH=$PWD .venv/bin/python benchmarks/search_eval.py --grids "
                f"{grid}={csv} --seeds 3 --surrogates gp --drawn 25 --no-fixed --jobs {jobs} --out "
                f"docs/results/search/{folder}/drawn` ({check('../../')}, on the 16 CPU cores of the H200 machine)")
    rebuild("fixed-15-seeds", 0, None, "`PYTHONPATH=$PWD .venv/bin/python benchmarks/search_eval.py --seeds 15 "
            "--surrogates gp --goals best,lowest --jobs 16 --out docs/results/search/fixed-15-seeds` (commit e574315, "
            "the level check, on the 16 CPU cores of the H200 machine: device-final.sh in "
            "[level-check](../level-check/README.md))")
    rebuild("synthetic/42-84-fixed", 0, new, "`PYTHONPATH=$PWD .venv/bin/python benchmarks/search_eval.py --grids "
            "synth42=/tmp/synth42/results.csv,synth84=/tmp/synth84/results.csv --seeds 3 --surrogates gp --jobs 2 "
            "--out /tmp/syn/s42_84` (the best-goal records replayed with the level check, commit e574315: "
            "[level-check](../../level-check/README.md); one search of 18 measured one more row, the same answer)")


if __name__ == "__main__":
    main()
