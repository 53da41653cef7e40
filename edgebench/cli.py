"""edgebench command line: bench, run, export, doctor, profiles.

Only the standard library is imported at module level so `edgebench --help` works on a bare
Python; every subcommand imports what it needs when it runs.

Size: one handler per subcommand, each short; bench's options and profile overrides are in
bench_options.py. `run` resolving one model's named inputs (--onnx/--shapes/--vocab/--data) is the
largest; it is the next thing to move out if this grows.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from edgebench import __version__
from edgebench.atomic_files import write_bytes_atomic, write_json_atomic
from edgebench.backends.base import Env
from edgebench.commands.best import add_best_arguments
from edgebench.commands.console import progress_line, slo_table, start_line, summary_table
from edgebench.commands.doctor import report as doctor_report
from edgebench.commands.options import (
    EXIT_DISK_FULL,
    EXIT_INTERRUPTED,
    EXIT_NOTHING_MEASURED,
    EXIT_PARTIAL,
    OneLineParser,
    add_accuracy_arguments,
    add_bench_arguments,
    add_load_options,
    add_window_options,
    apply_accuracy,
    apply_overrides,
    csv_list,
    load_overrides,
    nothing_to_measure,
    positive_int,
    seconds,
    window_overrides,
)
from edgebench.commands.progress import (
    SweepProgress,
    describe_estimate,
    duration_text,
    estimate_range,
    fitted,
    p99_note,
)
from edgebench.config.profile import list_profiles, load_profile
from edgebench.config.shapes import parse_shapes
from edgebench.device.system import collect_system_info
from edgebench.errors import DiskFullError, EdgebenchError, InputError, ModelError
from edgebench.interrupt_guard import interrupts_wait_for_imports
from edgebench.models.artifacts import Artifacts
from edgebench.models.export import export_onnx, load_external_onnx
from edgebench.models.inputs import load_data, parse_values
from edgebench.models.inputs import with_values as with_values_of
from edgebench.models.missing_inputs import MissingInputs
from edgebench.models.precision import onnx_spec, resolved_spec
from edgebench.models.proposal import command_line
from edgebench.models.spec import load_model_spec
from edgebench.pipeline.estimate import estimate
from edgebench.pipeline.idle import idle_baseline
from edgebench.pipeline.model_cache import ModelCache
from edgebench.pipeline.phases import phase_listener
from edgebench.pipeline.plan import describe, expand
from edgebench.pipeline.slo_search import run_slo_searches
from edgebench.pipeline.sweep import new_run_id, run_sweep
from edgebench.remote.command import main as remote_main
from edgebench.report.answer import bench_answer, best_text, next_steps
from edgebench.report.summary import build_report
from edgebench.report.summary import describe as describe_report
from edgebench.results.confine import check_run_folder
from edgebench.results.reader import read_cells
from edgebench.results.rundir import create_run_dir, out_dir_problem
from edgebench.results.runlock import RunLock
from edgebench.results.runs import load_run
from edgebench.results.store import ResultsStore, judged_by_retired_rule
from edgebench.runner.workdirs import remove_stale_run_workdirs, run_work_root
from edgebench.search.driver import run_search, search_text

DEFAULT_OUT = "runs"
# bench options that change the plan; --resume continues the plan saved in the run folder and refuses them
# (--budget-rows is not one: more rows for a search its budget stopped leave the plan, and every row's hash, as saved)
RESUME_CONFLICTS = ("device", "models", "precisions", "batches", "instances", "backends", "mode", "duration",
                    "repeats", "out", "min_inferences", "max_duration", "rate", "slo_ms", "max_streams", "gpu_sharing",
                    "arrival", "slo_repeats", "horizon_s", "weights", "dataset",
                    "labels", "accuracy_samples", "calibration_samples", "value", "search", "search_seed",
                    "objective", "power_cap_w", "max_accuracy_drop", "slo_percentile")
# --resume of a run folder an earlier edgebench wrote: rows it judged invalid for too few inferences alone
RETIRED_RULE_NOTE = ("were invalid by the retired rule 'only N inferences in the window; p99 needs 662': measured "
                     "again, judged per metric (a percentile too few inferences back is empty, the row valid)")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="edgebench",
        description="How fast, how power-hungry and how accurate a DNN is on an edge device.",
    )
    p.add_argument("--version", action="version", version=f"edgebench {__version__}")
    p.add_argument("--cache", help="artifact cache folder (default $EDGEBENCH_CACHE or ~/.cache/edgebench)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    b = sub.add_parser("bench", help="run a device profile's sweep and write runs/<run-id>/results.csv")
    add_bench_arguments(b)

    r = sub.add_parser("run", help="measure one configuration")
    src = r.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="model name (models/NAME.yaml)")
    src.add_argument("--onnx", help="path of an ONNX file exported elsewhere")
    r.add_argument("--backend", default="ort")
    r.add_argument("--precision", default="fp32")
    r.add_argument("--batch", type=positive_int, default=None,
                   help="samples per inference (default: the batch the graph fixes, else the --shapes batch, else 1)")
    r.add_argument("--shapes", help="shapes of the inputs' symbolic axes, trtexec form, the full shape as the graph "
                                    "takes it: input_ids:8x128,attention_mask:8x128 (the batch axis stays --batch)")
    r.add_argument("--batch-axis", help="the batch axis of inputs, for --onnx: state:1 (a [layers, batch, hidden] "
                                        "state), sr:none (no batch axis: fed as is at every batch); default: found "
                                        "from the graph")
    r.add_argument("--vocab", help="vocabulary size of token-id inputs: 30522, or input_ids:30522,token_type_ids:2")
    r.add_argument("--value", metavar="NAME:V[,NAME:V]", help="feed an input as a constant (timing, int8 calibration "
                                                            "and accuracy alike): sr:16000 for a sample rate")
    r.add_argument("--data", help=".npz (one array per input name) or a folder of .npz: real inputs for the "
                                  "accuracy check and int8 calibration")
    r.add_argument("--instances", type=positive_int, default=1)
    r.add_argument("--placement", default=None, help="device of every instance (default from the profile: cpu)")
    r.add_argument("--mode", choices=["process", "streams"], default="process")
    r.add_argument("--duration", type=seconds, help="minimum measured window in seconds")
    add_window_options(r)
    r.add_argument("--device", default="host", help="profile whose run/telemetry settings apply")
    r.add_argument("--out", default=DEFAULT_OUT)
    r.add_argument("--strict", action="store_true",
                   help=f"exit {EXIT_PARTIAL} when the row failed or is invalid (default: 0 when it was measured)")
    add_load_options(r)
    add_accuracy_arguments(r)

    e = sub.add_parser("export", help="export a model to ONNX (cached) and print where it is")
    e.add_argument("--model", required=True)
    e.add_argument("--out", help="also copy the ONNX file here")

    rp = sub.add_parser("report", help="figures, tables (CSV/Markdown/LaTeX) and a summary page from run folders")
    rp.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run folders; the first is the reference")
    rp.add_argument("--out", help="report folder (default: RUN_DIR/report of the first run)")
    rp.add_argument("--max-timelines", type=int, default=40, metavar="N",
                    help="draw at most N power timelines per run (default 40)")
    rp.add_argument("--formats", type=csv_list(str), default=["png", "pdf"], help="figure formats (default png,pdf)")

    bs = sub.add_parser("best", help="the best configuration under limits (latency SLO, power cap, accuracy "
                                     "floor), its interval and whether it beats the runner-up beyond noise")
    add_best_arguments(bs)

    # `edgebench remote` parses its own options (edgebench/remote/command.py); "\0" as prefix char hands
    # every word, --help included, to that parser
    rm = sub.add_parser("remote", help="run sweeps on boards over ssh and fetch the results "
                                       "(`edgebench remote --help`)", add_help=False, prefix_chars="\0")
    rm.add_argument("remote_args", nargs=argparse.REMAINDER)

    sub.add_parser("doctor", help="what backends, providers and samplers this machine has, and why not")
    sub.add_parser("profiles", help="list device profiles with their descriptions")
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    finally:  # whatever ended the command (a cleanup error can replace a Ctrl-C's KeyboardInterrupt)
        _forget_interrupt_inside_exec()


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # a refusal proposes this command line, completed
    if args.command is None:
        parser.print_help()
        return 2

    try:
        handler = {"bench": cmd_bench, "run": cmd_run, "export": cmd_export,
                   "doctor": cmd_doctor, "profiles": cmd_profiles, "report": cmd_report,
                   "remote": cmd_remote, "best": cmd_best}[args.command]
        with interrupts_wait_for_imports():  # a Ctrl-C inside a lazy framework import waits for it to end
            code = handler(args)  # `remote` answers its own Ctrl-C with EXIT_INTERRUPTED
    except KeyboardInterrupt:
        run_dir = getattr(args, "run_dir", None)
        if run_dir is None:
            print("edgebench: interrupted before a run folder was created", file=sys.stderr)
        else:
            print(f"edgebench: interrupted; rows written so far are kept in {run_dir} "
                  f"(resume with: edgebench bench --resume {run_dir})", file=sys.stderr)
        code = EXIT_INTERRUPTED
    except NothingToMeasure as exc:
        print(f"edgebench: {exc}", file=sys.stderr)
        return EXIT_NOTHING_MEASURED
    except DiskFullError as exc:  # rows so far kept whole, the row in flight removed: resume once space is freed
        print(f"edgebench: error: {exc}", file=sys.stderr)
        return EXIT_DISK_FULL
    except EdgebenchError as exc:
        print(f"edgebench: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `edgebench bench --dry-run | head`: the reader left, nothing is wrong
        sys.stderr.close()
        return 0
    return code


def _forget_interrupt_inside_exec() -> None:
    """Exit with main's status after a handled Ctrl-C (130), not death by SIGINT. CPython marks a KeyboardInterrupt
    that leaves code run by exec/eval of a string as unhandled and, under `python -m`, kills itself with SIGINT at
    exit even though main caught it; such code runs during any lazy import (dataclasses build their methods that
    way), so a Ctrl-C landing in one made `bench` end with -2 instead of 130. Evaluating a string that completes
    clears that mark (the interpreter resets it before every such evaluation)."""
    exec("pass")


def _cache(args: argparse.Namespace) -> Any:
    return Artifacts(args.cache)


def _start_run_dir(profile: Any, out: str, run_id: str, args: argparse.Namespace) -> tuple[Path, Any]:
    run_dir = create_run_dir(out, run_id)  # unique even for two sweeps started in the same second
    args.run_lock = RunLock(run_dir).acquire()  # released by _sweep when the sweep ends, however it ends
    args.run_dir = run_dir
    _save_profile(profile, run_dir)
    try:
        write_json_atomic(run_dir / "system.json",
                          collect_system_info({"profile": profile.name, "run_id": run_dir.name}))
    except OSError as exc:
        raise EdgebenchError(f"{run_dir}: cannot write the run folder: {exc.strerror or exc}") from None
    return run_dir, ResultsStore(run_dir)


def _exit_status(counts: dict[str, int], strict: bool) -> int:
    """0, or 1 when configs were attempted and none was measured (all failed), EXIT_NOTHING_MEASURED when every row
    was skipped; with --strict EXIT_PARTIAL
    when any row failed or is invalid. Invalid rows are measurements whose validity the row states,
    skipped rows are the plan's decision."""
    measured = counts.get("ok", 0) + counts.get("invalid", 0)
    if counts.get("failed", 0) and not measured:
        return 1
    if not measured:  # every row skipped (a resumed plan; a new one is refused before it starts)
        return EXIT_NOTHING_MEASURED
    if strict and (counts.get("failed", 0) or counts.get("invalid", 0)):
        return EXIT_PARTIAL
    return 0


def _sweep(profile: Any, planned: list, run_dir: Path, store: Any, args: argparse.Namespace,
           onnx_specs: dict | None = None) -> int:
    try:
        return _sweep_locked(profile, planned, run_dir, store, args, onnx_specs)
    finally:
        lock = getattr(args, "run_lock", None)
        if lock is not None:
            lock.release()


def _sweep_locked(profile: Any, planned: list, run_dir: Path, store: Any, args: argparse.Namespace,
                  onnx_specs: dict | None = None) -> int:
    models = ModelCache(_cache(args), profile.calibration.model_dump(), onnx_specs=onnx_specs or {},
                        accuracy=profile.accuracy.model_dump(),
                        shapes=dict(profile.sweep.shapes or {}),
                        values=dict(profile.sweep.values or {}))
    print(f"edgebench: run folder {run_dir}", flush=True)
    # left by a harness killed mid-row (kill -9): its owner is gone (the temp folder's, this run folder's work root's)
    if removed := remove_stale_run_workdirs(run_dir):
        print(f"edgebench: removed {len(removed)} temp folder(s) of killed sweeps: "
              f"{', '.join(str(p) for p in removed[:3])}{' ...' if len(removed) > 3 else ''}", flush=True)
    work_root, why = run_work_root(run_dir)
    if work_root is not None:  # where each row's timestamp files go while it runs (issue 37)
        print(f"edgebench: rows keep their timestamp files in {work_root} while they run ({why})", flush=True)
    t0 = time.monotonic()
    sweep_estimate = None
    searching = profile.search.goal is not None
    if profile.run.slo_ms is None and not searching:  # a search measures as many rows as it needs: no estimate
        sweep_estimate = estimate(planned, profile, run_dir.parent, store.done_hashes(), models.artifacts.root,
                                  {name: spec.onnx_path for name, spec in models.onnx_specs.items() if spec.onnx_path})
        print(fitted(f"edgebench: {describe_estimate(sweep_estimate)}"), flush=True)
    idle_w, idle_note = idle_baseline(profile)
    print(f"edgebench: {idle_note}", flush=True)
    searches = []
    outcome = None
    if searching:  # adaptive: the rows most likely to change the answer, until it is settled or the budget is spent
        outcome = run_search(planned, profile, run_dir, store, models, on_row=progress_line, on_start=start_line,
                             on_step=lambda text: print(fitted(f"edgebench: {text}"), flush=True),
                             idle_power_w=idle_w)
    elif profile.run.slo_ms is not None:  # adaptive: probes with more or fewer streams, one row each

        searches = run_slo_searches(planned, profile, Env.detect(), run_dir, store, models, on_row=progress_line,
                                    on_start=start_line, idle_power_w=idle_w)
    else:
        with SweepProgress(sweep_estimate) as shown, phase_listener(shown.on_phase):
            run_sweep(planned, profile, run_dir, store, models, on_row=shown.on_row, idle_power_w=idle_w,
                      on_start=shown.on_start)
    rows = store.records()
    summary_table(rows, title=f"edgebench {profile.name}: {run_dir / 'results.csv'}")
    if profile.run.slo_ms is not None:  # one line per option set x GPU sharing mode, side by side
        slo_table([s.record for s in searches])
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    print("rows: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    if (note := p99_note(rows)) is not None:
        print(fitted(f"edgebench: {note}"))
    if sweep_estimate is not None and sweep_estimate.rows:
        print(f"wall time {duration_text(time.monotonic() - t0)} ({estimate_range(sweep_estimate)} estimated at the "
              "start)")
    if outcome is not None:
        print(search_text(outcome, run_dir))
    elif (answer := bench_answer(run_dir, args, by_default=profile.run.slo_ms is None)) is not None:
        print(answer)  # the limits given, else the default objective; an SLO search's table is its own answer
    print(next_steps(run_dir))
    status = _exit_status(counts, getattr(args, "strict", False))
    if status == EXIT_PARTIAL:
        print(f"edgebench: --strict: {counts.get('failed', 0)} failed and {counts.get('invalid', 0)} invalid "
              f"row(s); exit {EXIT_PARTIAL}", file=sys.stderr)
    elif status == EXIT_NOTHING_MEASURED:
        print(f"edgebench: nothing measured: all {len(rows)} row(s) skipped (their reasons are in the table); "
              f"exit {EXIT_NOTHING_MEASURED}", file=sys.stderr)
    return status


def resumed_threads(run_dir: Path) -> dict[int, int]:
    """instances -> threads_per_instance of the rows a run already has (the threads an auto setting chose then)."""
    rows, _partial = read_cells(run_dir / "results.csv")
    return {int(r["instances"]): int(r["threads_per_instance"]) for r in rows
            if r.get("instances", "").isdigit() and r.get("threads_per_instance", "").isdigit()}


def _resume(args: argparse.Namespace, env: Any) -> int:
    given = [f"--{name.replace('_', '-')}" for name in RESUME_CONFLICTS if getattr(args, name, None) is not None]
    if given:
        raise EdgebenchError(
            f"--resume continues the plan saved in {Path(args.resume) / 'profile.yaml'}; {', '.join(given)} "
            "would change it and mix two plans in one results.csv: start a new run with them instead")
    run_dir = Path(args.resume)
    check_run_folder(run_dir, "--resume")  # it writes there: never through a link out of the folder
    saved = run_dir / "profile.yaml"
    if not saved.exists():
        raise EdgebenchError(f"{run_dir}: not a run folder (no profile.yaml)")
    profile = load_profile(str(saved))
    new_budget = getattr(args, "budget_rows", None)
    if new_budget is not None:
        profile = _with_search_budget(profile, new_budget, run_dir)
    planned = planned_with_values(profile, env, resumed_threads=resumed_threads(run_dir))
    if args.dry_run:  # read only: no lock, no repair of results.csv, nothing measured
        done = ResultsStore(run_dir).done_hashes()
        todo = sum(1 for p in planned if p.skip_reason is None and p.cfg.config_hash() not in done)
        print(f"profile {profile.name} (resumed from {saved})")
        print(describe(planned))
        print(f"resume: {sum(1 for p in planned if p.cfg.config_hash() in done)} of {len(planned)} "
              f"configurations already done; {todo} would be measured")
        print(fitted(describe_estimate(estimate(planned, profile, run_dir.parent, done, _cache(args).root))))
        if rejudged := sum(1 for r in ResultsStore(run_dir).records() if judged_by_retired_rule(r)):
            print(f"resume: {rejudged} of them {RETIRED_RULE_NOTE}")
        return 0
    # the lock first: resume() may rewrite results.csv, which must never happen under another writer
    args.run_lock = RunLock(run_dir).acquire()
    args.run_dir = run_dir
    try:
        store = ResultsStore.resume(run_dir)
    except BaseException:
        args.run_lock.release()
        raise
    print(f"edgebench: resuming {run_dir}: {len(store.done_hashes())} rows already done", flush=True)
    if new_budget is not None:  # the folder says what budget its search ran with: `best` and a later resume read it
        _save_profile(profile, run_dir)
        print(f"edgebench: search budget now {new_budget} row(s) in all", flush=True)
    if rejudged := store.resume_report.get("rejudged_moved", 0):
        print(f"edgebench: {rejudged} row(s) {RETIRED_RULE_NOTE} (their old lines are in attempts.csv)", flush=True)
    return _sweep(profile, planned, run_dir, store, args)


def _with_search_budget(profile: Any, budget_rows: int, run_dir: Path) -> Any:
    """The saved profile with its search's row budget raised to `budget_rows` (in all, the rows measured
    included); refused for a grid sweep's folder and for a budget below the rows it already has."""
    if profile.search.goal is None:
        raise EdgebenchError(f"--budget-rows with --resume extends a search; {run_dir} holds a grid sweep (its "
                             "profile.yaml has no search.goal)")
    rows, _partial = read_cells(run_dir / "results.csv")
    searched = sum(1 for r in rows if r.get("status") != "skipped")  # skipped rows are written before a search
    if budget_rows < searched:
        raise EdgebenchError(f"--budget-rows {budget_rows} is below the {searched} row(s) the search in {run_dir} "
                             "already measured; the budget counts every row of the search")
    return profile.with_section("search", {"budget_rows": "--budget-rows"}, budget_rows=budget_rows)


def _save_profile(profile: Any, run_dir: Path) -> None:
    import yaml

    resolved = {k: v for k, v in profile.to_dict().items() if k != "source"}  # a loadable profile file
    try:
        write_bytes_atomic(run_dir / "profile.yaml", yaml.safe_dump(resolved, sort_keys=False).encode())
    except OSError as exc:
        raise EdgebenchError(f"{run_dir}: cannot write the run folder: {exc.strerror or exc}") from None


def cmd_bench(args: argparse.Namespace) -> int:
    env = Env.detect()
    if args.resume:
        return _resume(args, env)

    profile = with_values(apply_overrides(load_profile(args.device or "host"), args), args.value)
    planned = planned_with_values(profile, env)
    if args.dry_run:
        print(f"profile {profile.name} ({profile.source})")
        print(describe(planned))
        if (nothing := nothing_to_measure(planned)) is not None:
            print(f"edgebench: {nothing}", file=sys.stderr)
        else:
            print(fitted(describe_estimate(estimate(planned, profile, args.out or DEFAULT_OUT, None,
                                                    _cache(args).root))))
        return 0
    refuse_empty_plan(planned)
    run_dir, store = _start_run_dir(profile, args.out or DEFAULT_OUT, new_run_id(profile.name), args)
    return _sweep(profile, planned, run_dir, store, args)


class NothingToMeasure(EdgebenchError):
    """Every configuration of the plan is skipped: exit EXIT_NOTHING_MEASURED, before a run folder is made."""


def refuse_empty_plan(planned: list) -> None:
    if (nothing := nothing_to_measure(planned)) is not None:
        raise NothingToMeasure(f"{nothing} (no run folder written; `--dry-run` shows the plan)")


def with_values(profile: Any, text: str | None) -> Any:
    """The profile with --value NAME:V[,NAME:V] over its sweep.values (so the run folder's profile.yaml keeps them)."""
    if not text:
        return profile
    return profile.with_overrides("sweep", {"values": "--value"},
                                  values={**(profile.sweep.values or {}), **parse_values(text)})


def planned_with_values(profile: Any, env: Any, **kw: Any) -> list:
    """The plan, its errors (unknown model, backend) first, then the models' inputs checked; configs carry each
    model's fixed input values."""
    planned = expand(profile, env, **kw)
    values = check_model_inputs(profile)
    return expand(profile, env, input_values=values, **kw) if any(values.values()) else planned


def check_model_inputs(profile: Any) -> dict[str, dict[str, Any]]:
    """Resolve every model's input set (sweep.shapes, sweep.values, spec shapes/vocab/values) before anything runs: a
    bad shape or a missing one is one error naming the model's input, not a failed row per config. Returns each
    model's fixed input values (the plan puts them in its configs); a sweep value no model has an input for is an
    error."""

    shapes = profile.sweep.shapes or {}
    values = parse_values(profile.sweep.values, "sweep.values")
    out: dict[str, dict[str, Any]] = {}
    names: set[str] = set()
    for model in profile.sweep.models:
        spec = resolved_spec(load_model_spec(model), shapes.get(model), f"{profile.source}: sweep.shapes.{model}",
                             values, "--value")
        out[model] = {d.name: d.value for d in spec.inputs if d.value is not None}
        names |= {d.name for d in spec.inputs}
    if missing := sorted(set(values) - names):
        raise EdgebenchError(f"--value: no model of the sweep has an input named {', '.join(map(repr, missing))} "
                             f"(models: {', '.join(profile.sweep.models)})")
    return out


def cmd_run(args: argparse.Namespace) -> int:
    env = Env.detect()
    profile = load_profile(args.device)
    onnx_specs = {}
    model = args.model
    fixed_batches: dict[str, int] = {}
    batch = args.batch
    if args.onnx:
        load_external_onnx(args.onnx, expected_shape=None, batch=None)
        label = Path(args.onnx).stem
        shapes = args.shapes or (profile.sweep.shapes or {}).get(label)
        try:
            spec = onnx_spec(args.onnx, shapes=shapes, vocab=args.vocab, data=args.data,
                             shapes_source="--shapes" if args.shapes else f"sweep.shapes.{label}",
                             batch_axis=args.batch_axis, values=args.value)
        except MissingInputs as exc:  # everything missing, then the whole command line that would run
            raise InputError(exc.text(command_line(args.argv, exc.proposal)) if exc.proposal else str(exc)) from None
        fixed_batch_refusal(spec, batch, args.onnx)
        if args.data:  # read it now: a wrong file or array is an error before anything runs

            load_data(args.data, spec.inputs)
        onnx_specs[spec.name] = spec
        model = spec.name
        if spec.fixed_batch is not None:
            fixed_batches[model] = spec.fixed_batch
        if batch is None:
            given = shapes_batches(spec, parse_shapes(shapes)) if shapes else set()
            batch = spec.fixed_batch or (given.pop() if len(given) == 1 else 1)
    else:
        if args.batch_axis:
            raise EdgebenchError(f"--batch-axis: model {model} states its inputs' batch axes in its spec "
                                 f"(models/{model}.yaml: inputs[i].batch_axis); --batch-axis is for --onnx")
        if args.vocab:
            raise EdgebenchError(f"--vocab: model {model} states its inputs' vocabulary in its spec "
                                 f"(models/{model}.yaml); --vocab is for --onnx")
        spec = resolved_spec(load_model_spec(model), args.shapes, "--shapes")
        if args.value:  # every name must be an input of this model (a sweep's --value needs one model to have it)
            spec = resolved_spec(spec, None, "--shapes", parse_values(args.value), "--value")
            with_values_of(spec.inputs, parse_values(args.value), f"model {model}")
        if args.data:
            import dataclasses


            load_data(args.data, spec.inputs)
            onnx_specs[model] = dataclasses.replace(spec, data=args.data)
        batch = batch or 1
    sweep: dict[str, Any] = {
        "models": [model], "backends": [args.backend], "precisions": [args.precision],
        "batches": [batch], "modes": [args.mode],
        "placements": [[args.placement or profile.sweep.accelerator] * args.instances],
    }
    if args.shapes and not args.onnx:
        sweep["shapes"] = {model: args.shapes}
    run_flags = {"models": "--model", "backends": "--backend", "precisions": "--precision", "batches": "--batch",
                 "modes": "--mode", "placements": "--placement"}
    profile = profile.with_section("sweep", run_flags, **sweep)  # one config, as the flags name it
    profile = window_overrides(profile, args)
    profile = load_overrides(profile, args)
    profile = apply_accuracy(profile, args)
    fixed = {d.name: d.value for d in spec.inputs if d.value is not None}  # --value, the spec's, or --data's scalar
    if fixed:
        profile = profile.with_overrides("sweep", {"values": "--value"}, values=fixed)
    planned = expand(profile, env, onnx_model=model if args.onnx else None,
                     fixed_batches=fixed_batches, input_values={model: fixed}, specs=onnx_specs)
    refuse_empty_plan(planned)
    run_dir, store = _start_run_dir(profile, args.out, new_run_id(f"run-{model}"), args)
    return _sweep(profile, planned, run_dir, store, args, onnx_specs)


def shapes_batches(spec: Any, shapes: dict[str, tuple[int, ...]]) -> set[int]:
    """The batch each --shapes entry gives, read on its input's batch axis (inputs with none give no batch)."""
    axes = {d.name: d.batch_axis for d in spec.inputs}
    return {dims[axes[name]] for name, dims in shapes.items()
            if axes.get(name) is not None and len(dims) > axes[name]}  # type: ignore[index]


def fixed_batch_refusal(spec: Any, batch: int | None, path: str) -> None:
    """--batch that contradicts the batch the graph fixes (on the inputs' batch axes): one line, nothing runs."""
    fixed = spec.fixed_batch
    if batch is None or fixed is None or batch == fixed:
        return
    d = next(d for d in spec.inputs if d.batch_axis is not None and d.batch_axis not in d.dynamic_axes)
    raise ModelError(f"{path}: input '{d.name}' has a fixed batch of {fixed} (shape {list(d.full_shape(fixed))}, "
                     f"batch axis {d.batch_axis}), batch {batch} was requested (shape {list(d.full_shape(batch))}); "
                     "export it with a dynamic batch axis")


def _output_dir(path: Path, flag: str) -> Path:
    """mkdir -p `path` for --out, or one clear line saying why it cannot be."""

    problem = out_dir_problem(path)
    if problem:
        raise EdgebenchError(f"{flag} {path}: {problem}")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EdgebenchError(f"{flag} {path}: cannot create it: {exc.strerror or exc}") from None
    return path


def cmd_export(args: argparse.Namespace) -> int:
    import shutil


    spec = load_model_spec(args.model)
    art = export_onnx(spec, _cache(args))
    print(f"{spec.name}: {art.path} ({'cached' if art.reused else 'exported'}, sha256 {art.sha256[:16]}, "
          f"weights {spec.weights_label})")
    if args.out:
        _output_dir(Path(args.out).parent, "--out")
        try:
            shutil.copyfile(art.path, args.out)
        except OSError as exc:
            raise EdgebenchError(f"--out {args.out}: cannot write it: {exc.strerror or exc}") from None
        print(f"copied to {args.out}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    run_dirs = [Path(d) for d in args.run_dirs]
    for d in run_dirs:  # a cut last line or a linked file is set aside with a warning, never read as a row
        for note in load_run(d).notes:
            if "set aside" in note or "symlink" in note or "outside" in note:
                print(f"edgebench: warning: {note}", file=sys.stderr)
    bad = [f for f in args.formats if f not in ("png", "pdf", "svg")]
    if bad:  # before anything is written
        raise EdgebenchError(f"--formats: {', '.join(bad)} not one of png, pdf, svg")
    out = _output_dir(Path(args.out) if args.out else run_dirs[0] / "report", "--out")
    report = build_report(run_dirs, out, max_timelines=args.max_timelines, formats=tuple(args.formats))
    # the one speedup table (each run on its own, with a run column when several: never pooled)
    print((out / "tables" / "speedup.md").read_text())
    print(describe_report(report))
    return 0


def cmd_best(args: argparse.Namespace) -> int:
    print(best_text(args))
    return 0


def cmd_remote(args: argparse.Namespace) -> int:
    return remote_main(args.remote_args, cache=args.cache)


def cmd_doctor(args: argparse.Namespace) -> int:
    print(doctor_report())
    return 0


def cmd_profiles(args: argparse.Namespace) -> int:
    for name, desc in list_profiles():
        print(f"{name:<14} {desc}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
