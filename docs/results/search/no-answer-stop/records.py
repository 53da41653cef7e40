"""Put the replays of the searches this change moves in place of the published records of ../eval.json, and
re-render ../eval.md (its line 3 gains where they come from). Run once from the repository root (idempotent):

    python3 docs/results/search/no-answer-stop/records.py

Only a search that stopped with no answer can move (compare.txt, part 2): in ../eval.json those are H100 drawn
#31 (seeds 0-4, gp and loglinear), #38 (seed 1, gp) and #43 (seeds 3-4, loglinear). gp's come from
draw0-design-h100-torch.jsonl.gz (the H200 machine's CPU cores, where the published records were made; its other
244 searches gave the published ones), loglinear's from draw0-design-h100-torch-loglinear-here.jsonl.gz (replayed
here; its other 243 gave the published ones). The rest of ../eval.json stays as it is.
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

NOTE = (". The searches that stopped with no answer (H100 drawn #31, #38 and #43): commit 88a654d's search, which "
        "stops with no answer only at P < 0.01 and after the design: [no-answer-stop](no-answer-stop/README.md)")


def replays() -> dict[tuple, dict]:
    out = {}
    for name in ("draw0-design-h100-torch.jsonl.gz", "draw0-design-h100-torch-loglinear-here.jsonl.gz"):
        with gzip.open(HERE / name, "rt") as fh:
            for line in fh:
                r = json.loads(line)
                out[(r["grid"], r["goal_set"], r["goal"], r["surrogate"], r["seed"])] = r
    return out


def main() -> None:
    path = SEARCH / "eval.json"
    records = json.loads(path.read_text())
    new = replays()
    out, moved = [], 0
    for r in records:
        k = (r["grid"], r["goal_set"], r["goal"], r["surrogate"], r["seed"])
        if "no answer" in (r["stop"] or "") and k in new:
            rec = new[k]
            assert set(rec) == set(r), (k, set(rec) ^ set(r))
            moved += rec != r
            out.append(rec)
        else:
            out.append(r)
    path.write_text(json.dumps(out, indent=1, default=str))
    md = SEARCH / "eval.md"
    line3 = md.read_text().split("\n")[2]
    if NOTE not in line3:  # before the closing parenthesis; the notes that explain the records are one more
        line3 = line3[:-1].replace("see the last two notes", "see the last three notes") + NOTE + ")"
    with contextlib.redirect_stdout(io.StringIO()):
        search_eval.write_out(out, str(SEARCH), str(SEARCH / "eval-notes.md"), line3[1:-1])
    lines = md.read_text().split("\n")
    lines[2] = line3
    md.write_text("\n".join(lines))
    print(f"{moved} records replaced")


if __name__ == "__main__":
    main()
