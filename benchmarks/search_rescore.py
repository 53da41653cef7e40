"""Re-score stored search replays with issue 54's rule, from the records and the grids alone (no replay).

A replay record (benchmarks/search_eval.py: eval.json, or one JSON object a line, gzipped or not) names its grid,
its goal, its answer and the truth by configuration label. This script reads the grid back (search_eval.GRIDS,
MORE_GRIDS, or a synthetic grid made again by benchmarks/synthetic_grid.py, which is deterministic), recomputes the
truth with the answer layer (and counts where it differs from the stored one), and scores the answer with
search_eval.score_best: exact, right (the truth, or a median inside the truth's repeat range), the gap of the rest;
a front keeps its rule (every member the grid's repeat ranges settle on it, none they settle off), which already
reads the repeat ranges. It prints one table line per file, goal set, goal kind and surrogate, with the old score
beside it, and can write the new fields into JSON-list record files (`--write`) and render their eval.md again
(`--render`, keeping the title and command line of the eval.md that is there, and eval-notes.md where the folder
has one).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/search_rescore.py docs/results/search/eval.json \\
        docs/results/search/drawn-seed-1/eval.json --table /tmp/scoring.md
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import search_eval as se

ROOT = Path(__file__).resolve().parents[1]
# synthetic grids, as their records' commands made them (docs/results/search/README.md)
SYNTHETIC = {
    "synth42": ["--options", "", "--precisions", "fp32,fp16"],
    "synth84": ["--options", ""],
    "synth168": [],
    "synth168na": ["--no-accuracy"],
}


def load_records(path: Path) -> list[dict[str, Any]]:
    """A JSON list (eval.json) or one JSON object a line (gzipped or not; other lines skipped)."""
    raw = gzip.open(path, "rt").read() if path.suffix == ".gz" else path.read_text()
    if raw.lstrip().startswith("["):
        return list(json.loads(raw))
    return [json.loads(line) for line in raw.splitlines() if line.startswith("{")]


def grid_path(name: str, synthetic_dir: Path, given: dict[str, str] | None = None) -> str | None:
    """The results.csv of a grid by the name records give it (`given` first: --grid NAME=PATH); a synthetic grid is
    made once in `synthetic_dir`."""
    if given and name in given:
        return given[name]
    if name in se.GRIDS:
        return str(ROOT / se.GRIDS[name])
    if name in se.MORE_GRIDS:
        return str(ROOT / se.MORE_GRIDS[name])
    if name in SYNTHETIC:
        out = synthetic_dir / name
        if not (out / "results.csv").exists():
            subprocess.run([sys.executable, str(ROOT / "benchmarks" / "synthetic_grid.py"), "--out", str(out),
                            *SYNTHETIC[name]], check=True, stdout=subprocess.DEVNULL)
        return str(out / "results.csv")
    return None


def rescore(r: dict[str, Any], path: str) -> dict[str, Any]:
    """The record's new fields: right, exact (`same`, recomputed), truth_range, answer_median, gap_pct; and
    `truth_changed` when the answer layer's truth today is not the stored one (then the new truth is scored)."""
    points, grid, live = se._grid(path)
    point_of = {h: p.key for p in points for h in p.hashes}
    goal = se.goal_of_record(r)
    cache_key = (path, goal)
    if cache_key not in se._ANSWERS:
        se._ANSWERS[cache_key] = se.grid_answer(goal, live, point_of)
    full = se._ANSWERS[cache_key]
    key_of: dict[tuple[str, str], str] = {}
    for p in points:
        if (p.model, p.label) in key_of:
            raise ValueError(f"{path}: two configurations labelled {p.label!r}")
        key_of[(p.model, p.label)] = p.key
    label = {p.key: p.label for p in points}
    final = {m: tuple(key_of[(m, lab)] for lab in labs) for m, labs in r["answer"].items()}
    truth = full.truth
    stored = r.get("truth")
    changed = stored is not None and {m: list(v) for m, v in stored.items()} != {
        m: [label[k] for k in ks] for m, ks in truth.items()}
    out: dict[str, Any] = {"truth_changed": bool(changed)}
    if goal.mode == "best":
        score = se.score_best(goal, final, truth, points, grid)
        out.update(right=score["right"], same=score["exact"], truth_range=score["truth_range"],
                   answer_median=score["answer_median"], gap_pct=se.objective_gap(goal, final, truth, points, grid))
    else:
        out.update(right=bool(r["same_within_noise"]) if not changed else None, same=final == truth)
    if stored is None:
        out["truth"] = {m: [label[k] for k in ks] for m, ks in truth.items()}
    return out


def summarise(name: str, records: list[dict[str, Any]]) -> list[str]:
    """Table lines for one file: per goal set, goal kind and surrogate."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[(r["goal_set"], "front" if r["mode"] == "pareto" else "best", se.who(r))].append(r)
    lines = []
    for (goal_set, kind, surrogate), rs in sorted(groups.items()):
        best = kind == "best"
        lines.append(f"| {name} | {goal_set}, {kind} | {surrogate} | {len(rs)} | {se._share(rs, se.correct)} | "
                     f"{se._share(rs, lambda r: r['same'])} | {se.rest_text(rs) if best else '-'} | "
                     f"{se._worse_than(rs, 5.0) if best else '-'} | {se._share(rs, se.old_way)} | "
                     f"{sum(1 for r in rs if r.get('truth_changed'))} |")
    return lines


TABLE_HEAD = ["| records | goals | surrogate | searches | right (the truth, or inside its repeat range) | exact | "
              "not right (gap to the truth) | more than 5% worse than the truth | scored the old way (tied in the "
              "full grid) | truth today differs from the stored one |",
              "| --- | --- | --- | ---: | --- | --- | --- | ---: | --- | ---: |"]


def render(path: Path, records: list[dict[str, Any]]) -> None:
    """eval.md beside a JSON-list record file, again: its title and command line kept, eval-notes.md as notes."""
    md = path.with_name("eval.md")
    lines = md.read_text().splitlines() if md.exists() else []
    command_line = lines[2] if len(lines) > 2 and lines[2].startswith("`") else None
    notes = path.with_name("eval-notes.md")
    se.write_out(records, str(path.parent), str(notes) if notes.exists() else None, "", command_line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--synthetic-dir", type=Path, default=Path("/tmp/edgebench-synthetic-grids"))
    ap.add_argument("--write", action="store_true", help="write right, truth_range, answer_median into JSON-list "
                                                          "record files (eval.json), every other field kept")
    ap.add_argument("--render", action="store_true", help="with --write: render each file's eval.md again")
    ap.add_argument("--table", type=Path, help="also write the table here")
    ap.add_argument("--grid", action="append", default=[], metavar="NAME=PATH",
                    help="the grid a name stands for in these files (e.g. synth168=/tmp/synth168na/results.csv for "
                         "records made on the grid without accuracy, which name it synth168)")
    args = ap.parse_args(argv)
    given = dict(spec.split("=", 1) for spec in args.grid)
    lines = list(TABLE_HEAD)
    for path in args.files:
        records = load_records(path)
        kept = []
        for r in records:
            if "answer" not in r:  # issue 30's first records name only the truth: nothing to score
                continue
            # records of a trial's own script may lack these: read from the goal's name
            r.setdefault("mode", "pareto" if r["goal"] == "Pareto front" else "best")
            r.setdefault("goal_set", "drawn" if str(r["goal"]).startswith(("#", "knife-edge")) else "fixed")
            gp = grid_path(r["grid"], args.synthetic_dir, given)
            if gp is None:
                print(f"{path}: grid {r['grid']!r} unknown, record left out", file=sys.stderr)
                continue
            new = rescore(r, gp)
            if new["right"] is None:  # a front whose truth moved: its stored settled score is of another truth
                print(f"{path}: front truth moved ({r['grid']}, {r['goal']}, seed {r['seed']}): left out",
                      file=sys.stderr)
                continue
            r.update({k: v for k, v in new.items()})
            kept.append(r)
        try:
            name = str(path.relative_to(ROOT / "docs" / "results" / "search"))
        except ValueError:
            name = str(path)
        lines += summarise(name, kept)
        if len(kept) < len(records):
            lines.append(f"| {name} | {len(records) - len(kept)} record(s) not scored: no answer recorded, an unknown "
                         "grid or a front whose truth moved | | | | | | | | |")
        if args.write and path.suffix == ".json":
            for r in records:
                r.pop("truth_changed", None)
            path.write_text(json.dumps(records, indent=1, default=str))
            if args.render:
                render(path, records)
    text = "\n".join(lines)
    print(text)
    if args.table:
        args.table.write_text(text + "\n")
    return 0


def gap_distribution(records: list[dict[str, Any]]) -> str:
    """'median 4.1%, p90 30%, max 36%' of the gaps of the answers that are not right."""
    gaps = sorted(r["gap_pct"] for r in records if not se.correct(r) and r.get("gap_pct") is not None)
    if not gaps:
        return "-"
    return (f"median {statistics.median(gaps):.1f}%, p90 {gaps[min(len(gaps) - 1, int(0.9 * len(gaps)))]:.1f}%, "
            f"max {gaps[-1]:.1f}%")


if __name__ == "__main__":
    sys.exit(main())
