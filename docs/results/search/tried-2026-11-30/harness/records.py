"""eval.json files of a tried kernel's replays -> records.jsonl, the fields compare.py reads, with the ResNet-50 grid
renamed as the shipped records name it. Usage: python3 records.py DIR/records.jsonl A/eval.json [B/eval.json ...]"""
import json, sys
RENAME = {"h200-refgrid-r50": "h200-refgrid"}
FIELDS = ("grid", "goal_set", "goal", "mode", "surrogate", "seed", "rows", "grid_rows", "same", "same_within_noise",
          "gap_pct", "answer", "truth", "stop", "coverage")
out = []
for f in sys.argv[2:]:
    for r in json.load(open(f)):
        r["grid"] = RENAME.get(r["grid"], r["grid"])
        out.append(json.dumps({k: r[k] for k in FIELDS}))
open(sys.argv[1], "w").write("\n".join(out) + "\n")
print(len(out))
