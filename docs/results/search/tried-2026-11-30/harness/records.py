"""eval.json files of a tried kernel's replays -> records.jsonl, the fields compare.py reads, with the ResNet-50 grid
renamed as the shipped records name it. Usage: python3 records.py DIR/records.jsonl A/eval.json [B/eval.json ...]
A file named *.log is a replay's console log, read a record a line (a replay cut short writes no eval.json; its
lines carry no truth, which is then null)."""
import json, sys
RENAME = {"h200-refgrid-r50": "h200-refgrid"}
FIELDS = ("grid", "goal_set", "goal", "mode", "surrogate", "seed", "rows", "grid_rows", "same", "same_within_noise",
          "gap_pct", "answer", "truth", "stop", "coverage")
out = []
for f in sys.argv[2:]:
    rs = ([json.loads(line) for line in open(f) if line.startswith("{")] if f.endswith(".log")
          else json.load(open(f)))
    for r in rs:
        r["grid"] = RENAME.get(r["grid"], r["grid"])
        out.append(json.dumps({k: r.get(k) for k in FIELDS}))
open(sys.argv[1], "w").write("\n".join(out) + "\n")
print(len(out))
