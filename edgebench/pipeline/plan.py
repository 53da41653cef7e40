"""Expand a profile's sweep into RunConfigs; impossible ones are kept WITH the reason they are skipped."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from edgebench.backends.registry import BACKEND_NAMES, get_backend
from edgebench.config.problems import did_you_mean, unknown_text
from edgebench.config.profile import Profile
from edgebench.config.run_config import RunConfig
from edgebench.errors import EdgebenchError
from edgebench.models.spec import ModelSpec, list_models, load_model_spec
from edgebench.pipeline.workload import model_workload, with_precision
from edgebench.placement import Placement, compact_placement, placements_of
from edgebench.runner.mps import mps_missing_reason

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.backends.base import Env


@dataclass(frozen=True)
class PlannedRun:
    cfg: RunConfig
    skip_reason: str | None  # None = will run


def placement_sets(profile: Profile) -> list[tuple[Placement, ...]]:
    """Explicit `sweep.placements`, else `sweep.instances` copies of `sweep.accelerator`: parsed here, once."""
    explicit = profile.sweep.placements
    if explicit:
        return [placements_of(s) for s in explicit]
    acc = Placement(profile.sweep.accelerator)
    return [(acc,) * n for n in profile.sweep.instances]


def threads_for(profile: Profile, instances: int, cpu_count: int, resumed: Mapping[int, int] | None = None) -> int:
    """`auto`: what a user's own session gets: every core for one instance (ONNX Runtime's and torch's default
    intra-op threads), the cores split between N instances (cores // N, at least 1). No core is kept for the
    harness: its own work (a sampler at 20 Hz, the orchestrator asleep in wait()) needs far less than a core, and
    keeping one halved a 2-core machine's row (issue 27: 29 img/s where a plain InferenceSession reads 54).
    `resumed` (instances -> threads): what the run being resumed already chose for auto, which wins, so an older
    edgebench's choice (or another machine's) does not turn its finished rows into new configurations."""
    tpi = profile.run.threads_per_instance
    if tpi == "auto":
        if resumed and instances in resumed:
            return resumed[instances]
        return max(1, cpu_count // instances)
    return int(tpi)


def threads_note(profile: Profile, instances: int, cpu_count: int, threads: int) -> str:
    """The row's threads_note: how threads_per_instance was chosen."""
    if profile.run.threads_per_instance != "auto":
        return f"run.threads_per_instance: {threads}"
    if threads != threads_for(profile, instances, cpu_count):
        return f"auto: {threads}, as the run being resumed chose it for {instances} instance(s)"
    if instances == 1:
        return f"auto: {cpu_count} cores // 1 instance = {threads} (the framework's default for one session)"
    shared = " (the instances share cores)" if instances > cpu_count else ""
    return f"auto: {cpu_count} cores // {instances} instances = {threads}, cores split across instances{shared}"


def model_batches(profile: Profile, model: str, fixed_batches: dict[str, int] | None = None) -> list[int]:
    """The sweep's batches, or only the batch the model's graph fixes (a model spec with dynamic_batch: false is
    exported at batch 1; an external ONNX's fixed batch comes in `fixed_batches`). The row says so (batch_note)."""

    fixed = (fixed_batches or {}).get(model)
    if fixed is None and model in set(list_models()):
        fixed = load_model_spec(model).fixed_batch
    return [fixed] if fixed is not None else list(profile.sweep.batches)


def _ordered_combos(power_modes: list[str | None], models: list[str], backends: list[str], profile: Profile,
                    batches: dict[str, list[int]], option_sets: list[tuple]) -> list[tuple]:
    """(power mode, model, backend, precision, batch, placements, mode, sharing, options, repeat) in the order the
    sweep measures them. run.repeat_order interleaved (the default): a model's configurations are measured once per
    round, each round in the reverse order of the one before (A B C, C B A, A B C ...), so a host that drifts over
    the sweep (a busy neighbour, heat) falls alike on every configuration instead of on the ones measured later:
    with a configuration's repeats back to back (grouped), identical configurations on a busy host were "resolved"
    apart by the rank test (benchmarks/selection_twins.py, docs/results/calibration/selection-twins-*.md). The
    reversal keeps rows of one warm-pool key together, and cancels a drift linear in time."""
    run = profile.run
    out: list[tuple] = []
    for pm, m in itertools.product(power_modes, models):
        configs = [(b, p, batch, pl, mo, g, o)
                   for b, p in itertools.product(backends, profile.sweep.precisions)
                   for batch, pl, mo, g, o in itertools.product(batches[m], placement_sets(profile), profile.sweep.modes,
                                                                run.sharing_modes, option_sets)]
        if run.repeat_order == "grouped":
            out += [(pm, m, *c, r) for c in configs for r in range(run.repeats)]
            continue
        for r in range(run.repeats):
            out += [(pm, m, *c, r) for c in (configs if r % 2 == 0 else configs[::-1])]
    return out


def expand(profile: Profile, env: Env, *, onnx_model: str | None = None,
           fixed_batches: dict[str, int] | None = None, resumed_threads: Mapping[int, int] | None = None,
           input_values: Mapping[str, Mapping[str, Any]] | None = None,
           specs: Mapping[str, ModelSpec] | None = None) -> list[PlannedRun]:
    """Every combination of the sweep, in a stable order (_ordered_combos: power mode, model, then the repeats in
    rounds, or back to back with run.repeat_order grouped): the power mode is outermost so the board switches once
    per group of rows.

    `onnx_model` replaces the model list with one external ONNX (edgebench run --onnx). A model whose graph fixes
    the batch runs at that batch only (`fixed_batches` for external ONNX; model specs say dynamic_batch: false).
    `input_values`: per model, its fixed input values (cli resolves them from the specs and sweep.values); they are
    part of each config (its hash and label). `specs`: the specs the command line made (run --onnx's, run --model
    --data's; what ModelCache gets as onnx_specs): with the profile they give each config its workload
    (pipeline/workload.py), part of its hash and its rows' identity.
    """

    models = [onnx_model] if onnx_model else list(profile.sweep.models)
    if not onnx_model:
        known = list_models()
        for m in models:
            if m not in known:
                raise profile.error("sweep.models", unknown_text("model", m, known))
    backends = {}
    for name in profile.sweep.backends:
        try:
            backends[name] = get_backend(name)
        except EdgebenchError as exc:
            near = did_you_mean(name, BACKEND_NAMES) if ":" not in name else None
            raise profile.error("sweep.backends", unknown_text("backend", name, BACKEND_NAMES) if near
                                else str(exc)) from None

    run = profile.run
    option_sets = [tuple(sorted(o.items())) for o in (profile.sweep.option_sets or [{}])]
    power_modes: list[str | None] = [str(m) for m in (profile.power.modes or [])] or [None]
    if power_modes != [None] and not profile.power.allow_changes:
        raise profile.error("power.allow_changes",
                            f"power.modes {power_modes} would change the board's power mode (nvpmodel, needs root); "
                            "set power.allow_changes: true to allow it")
    planned: list[PlannedRun] = []
    batches = {m: model_batches(profile, m, fixed_batches) for m in models}
    workloads = {m: model_workload(profile, m, (specs or {}).get(m)) for m in models}
    combos = _ordered_combos(power_modes, models, list(backends), profile, batches, option_sets)
    for power_mode, model, backend_name, precision, batch, placements, mode, sharing, options, repeat in combos:
        cfg = RunConfig(
            model=model,
            backend=backend_name,
            precision=precision,
            batch=batch,
            placements=placements,
            mode=mode,
            threads_per_instance=threads_for(profile, len(placements), env.cpu_count, resumed_threads),
            repeat=repeat,
            options=options,
            power_mode=power_mode,
            gpu_sharing=sharing,
            input_values=tuple(sorted((input_values or {}).get(model, {}).items())),
            workload=with_precision(workloads[model], profile, precision),
            **run.per_row_values(),  # warmup_s, duration_s, ...: the run fields marked per_row
        )
        planned.append(PlannedRun(cfg, backends[backend_name].supports(cfg, env) or gpu_sharing_skip_reason(cfg)))
    return planned


def gpu_sharing_skip_reason(cfg: RunConfig) -> str | None:
    """Why an MPS row cannot run here (None for time-slicing rows and for MPS rows that can)."""
    if cfg.gpu_sharing != "mps":
        return None

    if not cfg.uses_gpu:
        return f"gpu_sharing=mps applies to CUDA placements; {cfg.placement} has none"
    return mps_missing_reason()


def describe(planned: list[PlannedRun]) -> str:
    """The --dry-run text: one line per config, with the reason for every skipped one. Placements are named as
    the console names them (`2x cpu`, `cuda:0+dla0`: placement.compact_placement), which also says how many
    instances run."""
    lines = []
    n_run = sum(1 for p in planned if p.skip_reason is None)
    lines.append(f"{len(planned)} configurations: {n_run} to run, {len(planned) - n_run} skipped")
    for i, p in enumerate(planned):
        c = p.cfg
        head = (f"{i:3d}  {c.model:<20} {c.backend:<5} {c.precision:<5} b{c.batch:<3} "
                f"{compact_placement(c.placement):<12} {c.mode:<8} threads={c.threads_per_instance}")
        extra = "".join(f" {k}={v}" for k, v in c.options) + (f" r{c.repeat}" if c.repeat else "")
        extra += f" power_mode={c.power_mode}" if c.power_mode is not None else ""
        extra += f" rate={c.rate_hz:g}/s arrival={c.arrival}" if c.rate_hz is not None else ""
        extra += " gpu_sharing=mps" if c.gpu_sharing == "mps" else ""
        extra += "".join(f" {k}={v}" for k, v in c.input_values)
        lines.append(head + extra + ("" if p.skip_reason is None else f"  SKIP: {p.skip_reason}"))
    return "\n".join(lines)
