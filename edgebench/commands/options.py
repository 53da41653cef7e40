"""What `edgebench bench` accepts: its options, their value types, and how they override a profile.

Below both the entry point (cli) and `edgebench remote` (remote/ship.py resolves a bench's models
here before shipping them to a board), so neither reaches into the other. Standard library only at
module level: `edgebench --help` must work on a bare Python.
"""

from __future__ import annotations

import argparse
from typing import Any

from edgebench.commands.best import OBJECTIVE_CHOICES, PERCENTILE_CHOICES, add_limit_arguments
from edgebench.config.profile import Profile
from edgebench.config.sections import ARRIVALS, GPU_SHARING
from edgebench.errors import EdgebenchError

# the profile field each option of bench/run overrides -> the flag, which errors about the value name
FLAGS = {
    "sweep": {"models": "--models", "precisions": "--precisions", "batches": "--batches", "instances": "--instances",
              "backends": "--backends", "modes": "--mode"},
    "run": {"duration_s": "--duration", "repeats": "--repeats", "rate_hz": "--rate", "slo_ms": "--slo-ms",
            "max_duration_s": "--max-duration", "min_inferences": "--min-inferences",
            "max_streams": "--max-streams", "arrival": "--arrival", "slo_repeats": "--slo-repeats",
            "slo_horizon_s": "--horizon-s", "gpu_sharing": "--gpu-sharing", "accuracy_samples": "--accuracy-samples"},
    "accuracy": {"weights": "--weights", "dataset": "--dataset", "labels": "--labels"},
    "calibration": {"samples": "--calibration-samples"},
    "search": {"goal": "--search", "objective": "--objective", "slo_ms": "--slo-ms", "slo_percentile": "--slo-percentile",
               "power_cap_w": "--power-cap-w", "max_accuracy_drop_pct": "--max-accuracy-drop",
               "budget_rows": "--budget-rows", "seed": "--search-seed"},
}

# exit status of bench/run with --strict when some rows failed or are invalid (documented in docs/commands.md)
EXIT_PARTIAL = 3
EXIT_DISK_FULL = 75  # sysexits EX_TEMPFAIL: stopped by a full disk; free space, then --resume the run folder
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), rows so far kept
EXIT_NOTHING_MEASURED = 4  # every configuration of the plan was skipped (the plan's reasons say why): no run folder


class OneLineParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, like every other edgebench error: 'edgebench bench: error:
    argument --batches: every value must be >= 1, got '0' (see edgebench bench --help)', exit 2."""

    def error(self, message: str) -> Any:  # argparse's signature: never returns
        import sys

        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        sys.exit(2)  # pragma: no cover - exit() raised


def nothing_to_measure(planned: list[Any]) -> str | None:
    """Why a plan measures nothing (every configuration skipped): its distinct skip reasons with their counts,
    one line; None when something would run."""
    if not planned or any(p.skip_reason is None for p in planned):
        return None
    counts: dict[str, int] = {}
    for p in planned:
        counts[p.skip_reason] = counts.get(p.skip_reason, 0) + 1
    why = "; ".join(f"{n}x {reason}" if n > 1 else reason for reason, n in counts.items())
    return f"nothing to measure: all {len(planned)} configuration(s) are skipped: {why}"


def csv_list(kind: type) -> Any:
    """An argparse type: 'a,b,c' -> [kind('a'), kind('b'), kind('c')]."""

    def parse(text: str) -> list[Any]:
        try:
            return [kind(x.strip()) for x in text.split(",") if x.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {kind.__name__}, got {text!r}") from None

    return parse


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def positive_list(text: str) -> list[int]:
    values = csv_list(int)(text)
    bad = [v for v in values if v < 1]
    if bad or not values:
        raise argparse.ArgumentTypeError(f"every value must be >= 1, got {text!r}")
    return values


def seconds(text: str) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text!r}")
    return value


def add_bench_arguments(b: argparse.ArgumentParser) -> None:
    """The options of `edgebench bench`, added to its (sub)parser."""
    b.add_argument("--device", help="profile name or path (see `edgebench profiles`; default host)")
    b.add_argument("--models", type=csv_list(str), help="comma-separated model names (override the profile)")
    b.add_argument("--precisions", type=csv_list(str), help="e.g. fp32,fp16,int8")
    b.add_argument("--batches", type=positive_list, help="e.g. 1,8")
    b.add_argument("--instances", type=positive_list, help="e.g. 1,2")
    b.add_argument("--backends", type=csv_list(str), help="e.g. ort,null")
    b.add_argument("--mode", choices=["process", "streams"], help="instances as processes or as streams in one process")
    b.add_argument("--duration", type=seconds, help="minimum measured window in seconds")
    add_window_options(b)
    b.add_argument("--repeats", type=positive_int, help="measure every configuration this many times")
    b.add_argument("--out", help="folder the run folder is created in (default runs/)")
    b.add_argument("--value", metavar="NAME:V[,NAME:V]", help="feed an input as a constant in every model that has it "
                                                            "(timing, int8 calibration, accuracy): sr:16000")
    b.add_argument("--resume", metavar="RUN_DIR", help="continue a killed sweep with the plan saved in RUN_DIR; "
                   "rows already valid are kept (plan options such as --batches are refused with it)")
    b.add_argument("--dry-run", action="store_true", help="print the expanded plan with skip reasons and exit "
                   "(with --resume: which rows are done and which would run)")
    b.add_argument("--strict", action="store_true",
                   help=f"exit {EXIT_PARTIAL} when any row failed or is invalid (default: 0 when anything was measured)")
    add_load_options(b)
    add_accuracy_arguments(b)
    g = b.add_argument_group("the answer printed at the end (as `edgebench best RUN_DIR` gives it)")
    g.add_argument("--objective", choices=OBJECTIVE_CHOICES,
                   help="print the best configuration by this objective under the limits below (and --slo-ms)")
    add_limit_arguments(g, slo_help=None)
    g.add_argument("--slo-percentile", choices=PERCENTILE_CHOICES,
                   help="the latency percentile --slo-ms (without --rate) and the latency objective read (default p99)")
    s = b.add_argument_group("adaptive search: the answer from a fraction of the grid (docs/search.md)")
    s.add_argument("--search", choices=("best", "pareto"),
                   help="measure a spread seed set, model the grid, measure next what most likely changes the answer "
                        "(best under the limits above, with --slo-ms as a latency limit; or the Pareto front), stop when "
                        "it is settled; predictions go to predictions.csv, never to results.csv")
    s.add_argument("--budget-rows", type=positive_int, metavar="N",
                   help="with --search: measure at most N rows (default: every measurable row of the plan)")
    s.add_argument("--search-seed", type=int, metavar="N", help="with --search: picks the first seed configuration")


SHARING_MODES = GPU_SHARING


def sharing_list(text: str) -> str | list[str]:
    """'mps' -> 'mps'; 'time-slicing,mps' -> ['time-slicing', 'mps'] (a sweep dimension)."""
    modes = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in modes if m not in SHARING_MODES]
    if bad or not modes:
        raise argparse.ArgumentTypeError(f"expected time-slicing, mps or both comma-separated, got {text!r}")
    return modes[0] if len(modes) == 1 else modes


def add_window_options(parser: argparse.ArgumentParser) -> None:
    """How long a window runs: --min-inferences and --max-duration (next to --duration), for bench and run."""
    parser.add_argument("--min-inferences", type=positive_int, metavar="N",
                        help="the window runs on (up to --max-duration) until N inferences: 662 back a p99, 64 a "
                             "p90; a percentile with fewer is left empty with its reason, the row stays valid")
    parser.add_argument("--max-duration", type=seconds, metavar="S",
                        help="the window never runs longer than S seconds (default: the profile's "
                             "run.max_duration_s)")


def window_overrides(profile: Any, args: argparse.Namespace) -> Any:
    """The profile with --duration, --max-duration and --min-inferences applied (None = the profile's value). A
    --duration longer than the profile's max_duration_s raises it; one longer than --max-duration is an error."""
    duration = getattr(args, "duration", None)
    max_given = getattr(args, "max_duration", None)
    min_inferences = getattr(args, "min_inferences", None)
    if duration is not None and max_given is not None and max_given < duration:
        raise EdgebenchError(f"--max-duration {max_given:g} is shorter than --duration {duration:g}: the window "
                             "runs at least --duration and at most --max-duration seconds")
    run = profile.run
    if max_given is not None and duration is None and max_given < run.duration_s:
        raise EdgebenchError(f"--max-duration {max_given:g} is shorter than run.duration_s {run.duration_s:g} "
                             "of the profile: give --duration too")
    max_d = max_given if max_given is not None else (
        max(run.max_duration_s, duration) if duration is not None else None)
    return profile.with_overrides("run", FLAGS["run"], duration_s=duration, max_duration_s=max_d,
                                  min_inferences=min_inferences)


def add_load_options(parser: argparse.ArgumentParser) -> None:
    """Load shape and GPU sharing, shared by bench and run (override the profile's run section)."""
    parser.add_argument("--rate", type=float, metavar="HZ",
                        help="open loop: each instance is a stream of HZ arrivals per second; latency counts queueing")
    parser.add_argument("--slo-ms", type=float, metavar="MS",
                        help="with --rate: search the most streams whose p99 latency stays <= MS (slo_search.csv)")
    parser.add_argument("--max-streams", type=int, metavar="N", help="the SLO search tries at most N streams")
    parser.add_argument("--arrival", choices=ARRIVALS, metavar="NAME",
                        help="with --rate: how the streams' arrivals sit in time: random (default: uniform phases, "
                             "drawn per repeat; unsynchronised cameras), even (phases spread evenly: the best case), "
                             "poisson (exponential gaps, MLPerf Server), aligned (every stream at once)")
    parser.add_argument("--slo-repeats", type=int, metavar="R",
                        help="the SLO search measures each stream count R times (default 3) and accepts it only when "
                             "every repeat meets the SLO")
    parser.add_argument("--horizon-s", type=float, metavar="S",
                        help="with --slo-ms: how long the SLO verdict must hold (default 600, MLPerf Server's run): a "
                             "count meets only when p99 + the latency growth its window cannot exclude over S seconds "
                             "stays <= the SLO; windows run longer (up to --max-duration) until they can tell")
    parser.add_argument("--gpu-sharing", type=sharing_list, metavar="MODES",
                        help="time-slicing (default) or mps: run GPU instances under a CUDA MPS daemon edgebench "
                             "starts and stops per row; 'time-slicing,mps' runs (and SLO-searches) every config "
                             "under both, side by side")


def load_overrides(profile: Profile, args: argparse.Namespace) -> Profile:
    """The profile with the load options (--rate, --slo-ms, --max-streams, --gpu-sharing) applied."""
    slo_ms = None if searching(args, profile) else args.slo_ms  # a search (no --rate): the search's latency limit
    return profile.with_overrides("run", FLAGS["run"], rate_hz=args.rate, slo_ms=slo_ms,
                                  max_streams=args.max_streams, gpu_sharing=args.gpu_sharing,
                                  arrival=getattr(args, "arrival", None), slo_repeats=getattr(args, "slo_repeats", None),
                                  slo_horizon_s=getattr(args, "horizon_s", None))


def add_accuracy_arguments(p: argparse.ArgumentParser) -> None:
    """Real weights and labelled images, shared by bench and run."""
    g = p.add_argument_group("accuracy (real weights, labelled images)")
    g.add_argument("--weights", help="weights for every model: torchvision:IMAGENET1K_V2 (torchvision's enum member, "
                                     "from torch's cache or downloaded into it) or a state_dict file")
    g.add_argument("--dataset", metavar="FOLDER", help="labelled images (class subfolders, or flat + --labels): "
                                                       "rows get accuracy_top1_pct/top5_pct; int8 calibrates on a "
                                                       "disjoint subset of it unless the profile names a source")
    g.add_argument("--labels", metavar="FILE", help="'<image> <class index>' lines for a flat --dataset folder")
    g.add_argument("--accuracy-samples", type=int, metavar="N", help="images (inputs) each row is scored on")
    g.add_argument("--calibration-samples", type=int, metavar="N", help="int8 calibration images")


def apply_accuracy(profile: Profile, args: argparse.Namespace) -> Profile:
    """--weights/--dataset/--labels/--accuracy-samples/--calibration-samples into the profile (so profile.yaml
    of the run folder keeps them for --resume)."""
    profile = profile.with_overrides("accuracy", FLAGS["accuracy"], weights=args.weights, dataset=args.dataset,
                                     labels=args.labels)
    profile = profile.with_overrides("run", FLAGS["run"], accuracy_samples=args.accuracy_samples)
    source = "labelled" if args.dataset and profile.calibration.source == "synthetic" else None
    return profile.with_overrides("calibration", FLAGS["calibration"], source=source,
                                  samples=args.calibration_samples)


def parse_bench_args(bench_args: list[str]) -> argparse.Namespace:
    """Bench args as `edgebench bench` reads them (argparse errors exit with its usage message)."""
    parser = OneLineParser(prog="edgebench bench")
    add_bench_arguments(parser)
    return parser.parse_args(bench_args)


def apply_overrides(profile: Profile, args: argparse.Namespace) -> Profile:
    """The profile with the sweep/run options of `edgebench bench` (None = keep the profile's value) applied; an
    error about a value a flag gave names the flag."""

    if args.instances is not None and profile.sweep.placements:
        # explicit placement sets decide the instance count; --instances replaces them with copies of the accelerator
        profile = profile.with_section("sweep", placements=None)
    profile = profile.with_overrides(
        "sweep",
        FLAGS["sweep"],
        models=args.models,
        precisions=args.precisions,
        batches=args.batches,
        instances=args.instances,
        backends=args.backends,
        modes=[args.mode] if args.mode else None,
    )
    profile = window_overrides(profile, args)
    profile = profile.with_overrides("run", FLAGS["run"], repeats=args.repeats)
    return search_overrides(apply_accuracy(load_overrides(profile, args), args), args)


def searching(args: argparse.Namespace, profile: Profile | None = None) -> bool:
    """A search (--search, or search.goal in the profile, for bench: it has the search flags) without --rate:
    --slo-ms is the search's latency limit, not the streams search's SLO."""
    goal = getattr(args, "search", None) or (profile.search.goal if profile is not None and hasattr(args, "search")
                                             else None)
    return goal is not None and getattr(args, "rate", None) is None


def search_overrides(profile: Profile, args: argparse.Namespace) -> Profile:
    """The profile with --search and its limits and budget (search section), also for a search the profile sets
    (search.goal): its limits come from the same flags; --budget-rows / --search-seed without a search (given or
    in the profile) is an error."""
    if getattr(args, "search", None) is None and profile.search.goal is None:
        for flag in ("budget_rows", "search_seed"):
            if getattr(args, flag, None) is not None:
                raise EdgebenchError(f"--{flag.replace('_', '-')} needs --search best|pareto (or search.goal in the "
                                     "profile)")
        return profile  # --objective and the limits are the answer bench prints at its end (bench_answer)
    return profile.with_overrides(
        "search", FLAGS["search"], goal=getattr(args, "search", None), objective=getattr(args, "objective", None),
        slo_ms=getattr(args, "slo_ms", None) if searching(args, profile) else None,
        slo_percentile=getattr(args, "slo_percentile", None), power_cap_w=getattr(args, "power_cap_w", None),
        max_accuracy_drop_pct=getattr(args, "max_accuracy_drop", None),
        budget_rows=getattr(args, "budget_rows", None), seed=getattr(args, "search_seed", None))
