"""What `edgebench best` accepts: run folders (or results.csv files), the objective and the limits.

Standard library only: `edgebench --help` must work on a bare Python. The answer itself is computed by
report.answer (cli.py joins the two: commands/ sits below report/ in the stage order).
"""

from __future__ import annotations

import argparse
import math

OBJECTIVE_CHOICES = ("throughput", "energy", "latency")
PERCENTILE_CHOICES = ("p99", "p95", "p90", "p50")


def non_negative(what: str):  # noqa: ANN201 - an argparse type
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not math.isfinite(value) or value < 0:
            raise argparse.ArgumentTypeError(f"must be a finite number >= 0 ({what}), got {text!r}")
        return value
    return parse


def add_best_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                   help="run folders (or results.csv files); runs whose setups differ (board, versions) are "
                        "ranked apart")
    p.add_argument("--objective", choices=OBJECTIVE_CHOICES, default="throughput",
                   help="highest throughput_ips, lowest energy_per_inference_mj, or lowest latency "
                        "(the --slo-percentile column); default throughput")
    add_limit_arguments(p, slo_help="latency SLO: keep configurations whose --slo-percentile latency (per batch) "
                                    "is <= MS on every repeat")
    p.add_argument("--slo-percentile", choices=PERCENTILE_CHOICES, default="p99",
                   help="latency percentile the SLO and the latency objective read (default p99; a row has a p99 "
                        "only with >= 662 inferences)")
    p.add_argument("--model", help="rank this model only (default: every model, each on its own)")
    p.add_argument("--top", type=int, default=5, metavar="N", help="list the N best that meet every limit")


def add_limit_arguments(p: argparse.ArgumentParser | argparse._ArgumentGroup, slo_help: str | None) -> None:
    """--power-cap-w and --max-accuracy-drop (and --slo-ms when `slo_help` is given): shared with bench."""
    if slo_help is not None:
        p.add_argument("--slo-ms", type=non_negative("milliseconds"), metavar="MS", help=slo_help)
    p.add_argument("--power-cap-w", type=non_negative("watts"), metavar="W",
                   help="keep configurations whose power_w_mean is <= W on every repeat (in the row's power_scope)")
    p.add_argument("--max-accuracy-drop", type=non_negative("percentage points"), metavar="PCT",
                   help="keep configurations whose accuracy drop vs FP32 is <= PCT percentage points (top-1 vs "
                        "labels, else top-1 agreement with the FP32 reference)")
