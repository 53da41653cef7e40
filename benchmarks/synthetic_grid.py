"""A grid of known closed form, written as a run folder's results.csv, for replaying the adaptive search on grids
larger than the measured ones (benchmarks/search_eval.py --grids NAME=PATH/results.csv).

The form is search_eval.step_cost's: per precision a speed factor k (fp32 1, tf32 1.6, fp16 2.6, int8 3.4),
latency_ms_p90 = 2 (1 + batch / 8) (1 + 0.25 (instances - 1)) / k with lognormal noise of `noise` (3%) per row
(latency_ms_p99 = 1.2 x it; no p50), throughput = batch x instances x 1000 / latency_ms_p90, power_w =
40 + 10 k sqrt(instances) (no noise), energy from the two; top-1 agreement with fp32 of 100 - DISAGREE_PCT (0,
0.1, 0.3, 1.5 points) less |normal(0, 0.05)| per row (`edgebench best` reads 100 - agreement as the accuracy drop
of the other precisions; fp32's is 0 by definition). Smooth by construction: no cliff, no dip, no
jitter between repeats beyond the lognormal. What a search does on it says how its row share scales with the
grid's size, not how it does on hardware.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/synthetic_grid.py --out /tmp/synth84 --precisions fp32,tf32,fp16,int8
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import sys
from pathlib import Path
from typing import Any

SPEED = {"fp32": 1.0, "tf32": 1.6, "fp16": 2.6, "int8": 3.4}
DISAGREE_PCT = {"fp32": 0.0, "tf32": 0.1, "fp16": 0.3, "int8": 1.5}  # top-1 answers that differ from fp32's


def closed_form_rows(precisions: list[str], batches: list[int], instances_list: list[int], options: list[str],
                     repeats: int, noise: float = 0.03, seed: int = 0, accuracy: bool = True
                     ) -> tuple[list[dict[str, Any]], list[tuple[dict[str, Any], list[str]]]]:
    """(rows, [(the configuration's fields, its rows' config hashes)]) of the closed form above, in plan order;
    `accuracy` False: no row records an accuracy (as a sweep with run.accuracy_samples 0)."""
    rng = random.Random(seed)
    rng_accuracy = random.Random(seed + 1)  # its own stream: the latency draws stay those of step_cost's grid
    rows: list[dict[str, Any]] = []
    configs: list[tuple[dict[str, Any], list[str]]] = []
    for precision in precisions:
        k = SPEED[precision]
        for batch in batches:
            for instances in instances_list:
                for option in options:
                    fields = {"model": "net", "backend": "ort", "precision": precision, "batch": batch,
                              "instances": instances, "mode": "process", "placement": "+".join(["cpu"] * instances),
                              "options": option or None}
                    hashes = [f"{len(configs):04d}r{j}" for j in range(repeats)]
                    configs.append((fields, hashes))
                    for j, h in enumerate(hashes):
                        lat = 2.0 * (1 + batch / 8) * (1 + 0.25 * (instances - 1)) / k * math.exp(rng.gauss(0, noise))
                        power = 40.0 + 10 * k * instances ** 0.5
                        tput = batch * instances * 1000.0 / lat
                        row = {**fields, "config_hash": h, "repeat": j, "status": "ok", "throughput_ips": tput,
                               "latency_ms_p90": lat, "latency_ms_p99": lat * 1.2, "power_w_mean": power,
                               "energy_per_inference_mj": power / tput * 1000.0}
                        if accuracy:
                            row["accuracy_top1_agreement_pct"] = (100.0 - DISAGREE_PCT[precision]
                                                                  - abs(rng_accuracy.gauss(0, 0.05)))
                        rows.append(row)
    return rows, configs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="run folder to write results.csv into (created; must be empty)")
    ap.add_argument("--precisions", default="fp32,tf32,fp16,int8")
    ap.add_argument("--batches", default="1,2,4,8,16,32,64")
    ap.add_argument("--instances", default="1,2,4")
    ap.add_argument("--options", default=",graph_opt=all", help="option sets, comma-separated ('' is none)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--noise", type=float, default=0.03)
    ap.add_argument("--no-accuracy", action="store_true",
                    help="no row records an accuracy (docs/results/search/synthetic/168-no-accuracy's grid)")
    args = ap.parse_args(argv)
    precisions = args.precisions.split(",")
    if unknown := [p for p in precisions if p not in SPEED]:
        ap.error(f"--precisions: {', '.join(unknown)} not in the closed form (it knows {', '.join(SPEED)})")
    try:
        batches = [int(b) for b in args.batches.split(",")]
        instances = [int(i) for i in args.instances.split(",")]
    except ValueError as e:
        ap.error(f"--batches / --instances: comma-separated whole numbers ({e})")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        print(f"{out}: not empty", file=sys.stderr)
        return 2
    rows, configs = closed_form_rows(precisions, batches, instances, args.options.split(","), args.repeats, args.noise,
                                     accuracy=not args.no_accuracy)
    with (out / "results.csv").open("w", newline="") as fh:  # the columns it has; a reader leaves the rest empty
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"{out / 'results.csv'}: {len(rows)} rows, {len(configs)} configurations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
