"""The sections of a profile as typed models (pydantic v2): each field's type, default, limits and doc, in one place.

A profile file is validated against `ProfileFile`; its sections are read by attribute (`profile.run.workers`).
Types, ranges, choices and unknown keys are pydantic's to check (problems.py turns its errors into the one-line
"file: field 'run.duration_s': ..." messages); what spans fields or reads other files (run.max_duration_s against
run.duration_s, power.calibration, telemetry.samplers) is checked in profile.py after the types.

`run` fields marked `per_row` are copied into every RunConfig the plan makes (RunSection.per_row_values); their
defaults are RunConfig's defaults too, so a default is stated here only.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from edgebench.config.typed import BaseModel, ConfigDict, Field, JsonDict, field_validator

Precision = Literal["fp32", "tf32", "fp16", "bf16", "amp", "int8"]
Mode = Literal["process", "streams"]
GpuSharing = Literal["time-slicing", "mps"]  # how a row's GPU instances share the GPU (mps: edgebench runs the daemon)
PRECISIONS: tuple[str, ...] = get_args(Precision)
MODES: tuple[str, ...] = get_args(Mode)
GPU_SHARING: tuple[str, ...] = get_args(GpuSharing)
# open-loop arrival models (runner/arrivals.py): random (the default) matches unsynchronised cameras
Arrival = Literal["random", "even", "poisson", "aligned"]
ARRIVALS: tuple[str, ...] = get_args(Arrival)

PER_ROW: JsonDict = {"per_row": True}  # json_schema_extra of a run field every RunConfig carries


# lists are never empty (a sweep over nothing is a mistake); items as named
NonEmpty = Field(min_length=1)
Names = Annotated[list[str], NonEmpty]
Counts = Annotated[list[Annotated[int, Field(ge=1)]], NonEmpty]
Precisions = Annotated[list[Precision], NonEmpty]
Modes = Annotated[list[Mode], NonEmpty]
PlacementSets = Annotated[list[Annotated[list[str], NonEmpty]], NonEmpty]
Mapping_ = dict[str, Any]
OptionSets = Annotated[list[Mapping_], NonEmpty]
SharingModes = Annotated[list[GpuSharing], NonEmpty]
PowerModes = Annotated[list[str | int], NonEmpty]


class Section(BaseModel):
    """A profile section: unknown keys refused, values of exactly their type (no '8' for 8), read-only.

    `section["key"]`, `section.get("key")` and `{**section}` read it as a mapping too, as code written when sections
    were mappings does."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    def __getitem__(self, key: str) -> Any:
        if key not in type(self).model_fields:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in type(self).model_fields else default

    def keys(self) -> list[str]:
        """The field names (with __getitem__, `{**section}` and `dict(section)` give the plain mapping)."""
        return list(type(self).model_fields)


class SweepSection(Section):
    models: Names = ["tiny_cnn"]
    precisions: Precisions = ["fp32"]
    batches: Counts = [1]
    instances: Counts = [1]
    modes: Modes = ["process"]
    backends: Names = ["ort"]
    accelerator: str = Field(default="cpu", description="placement of every instance when `placements` is not given")
    placements: PlacementSets | None = Field(
        default=None, description="explicit placement sets; each set's length is its instance count")
    option_sets: OptionSets | None = Field(
        default=None, description="backend option sets, e.g. [{}, {cuda_graph: true}]; each is a row")
    shapes: Mapping_ | None = Field(default=None, description="per model, input shapes in trtexec form for symbolic axes, "
                                                      "e.g. {detector: 'images:1x3x320x320'}")
    values: dict[str, int | float] | None = Field(
        default=None, description="fixed input values by input name, {sr: 16000} (--value sr:16000): every model of "
                                  "the sweep with that input is fed the constant (timing, calibration, accuracy)")

    @field_validator("backends", mode="before")
    @classmethod
    def _yaml_null_is_the_null_backend(cls, value: Any) -> Any:
        """`backends: [null]` unquoted: YAML reads the null backend's name as nothing; here it can only mean it."""
        return ["null" if item is None else item for item in value] if isinstance(value, list) else value


class RunSection(Section):
    warmup_s: float = Field(default=1.0, ge=0.0, allow_inf_nan=False, json_schema_extra=PER_ROW)
    duration_s: float = Field(default=5.0, ge=0.1, allow_inf_nan=False, description="minimum measured window",
                              json_schema_extra=PER_ROW)
    max_duration_s: float = Field(default=60.0, ge=0.1, allow_inf_nan=False, description="the window never runs longer",
                                  json_schema_extra=PER_ROW)
    min_inferences: int = Field(default=662, ge=1, description="window extends until this many inferences (p99 needs 662)",
                                json_schema_extra=PER_ROW)
    threads_per_instance: int | Literal["auto"] = Field(
        default="auto", description="CPU threads per instance; auto = cores // instances")
    sub_windows: int = Field(default=5, ge=2, description="throughput stability is checked across this many sub-windows",
                             json_schema_extra=PER_ROW)
    stability_tolerance_pct: float = Field(default=15.0, ge=0.0, allow_inf_nan=False, json_schema_extra=PER_ROW)
    load_timeout_s: float = Field(default=300.0, ge=1.0, allow_inf_nan=False, json_schema_extra=PER_ROW)
    barrier_timeout_s: float = Field(default=120.0, ge=1.0, allow_inf_nan=False, json_schema_extra=PER_ROW,
                                     description="how long a ready instance waits for the start signal "
                                                 "(every instance ready)")
    collect_timeout_s: float = Field(default=60.0, ge=1.0, allow_inf_nan=False, json_schema_extra=PER_ROW)
    seed: int = Field(default=0, json_schema_extra=PER_ROW)
    accuracy_samples: int = Field(default=16, ge=0, description="fixed inputs compared against FP32 (0 = off)",
                                  json_schema_extra=PER_ROW)
    repeats: int = Field(default=1, ge=1, description="measure every config this many times (rows differ in `repeat`)")
    repeat_order: Literal["interleaved", "grouped"] = Field(
        default="interleaved",
        description="interleaved: a model's configurations are measured once per round, each round in the reverse "
                    "order of the one before, so a host that drifts over the sweep falls alike on all of them (the "
                    "verdict's rank test assumes it); grouped: a configuration's repeats back to back, where drift "
                    "between configurations reads as a difference")
    rate_hz: float | None = Field(default=None, ge=0.001, allow_inf_nan=False, json_schema_extra=PER_ROW,
                                  description="open loop: each instance is a stream with this fixed arrival rate "
                                              "(inferences/s); latency counts queueing (end - scheduled arrival). "
                                              "null = closed loop")
    slo_ms: float | None = Field(default=None, ge=0.001, allow_inf_nan=False, json_schema_extra=PER_ROW,
                                 description="with rate_hz: search the most streams whose p99 latency stays under this")
    arrival: Arrival = Field(
        default="random", json_schema_extra=PER_ROW,
        description="with rate_hz: how the streams' arrivals sit in time: random (uniform phases per stream, drawn "
                    "afresh per repeat: unsynchronised cameras), even (phases spread evenly over one period: the best "
                    "case), poisson (exponential gaps, MLPerf's Server scenario), aligned (every stream at once: "
                    "synchronised triggers, the worst case)")
    slo_horizon_s: float = Field(
        default=600.0, ge=0.0, allow_inf_nan=False, json_schema_extra=PER_ROW,
        description="with slo_ms: how long an SLO verdict must hold (MLPerf Server's 600 s minimum run): a stream "
                    "count meets only when its p99 plus the latency growth its window cannot exclude (the trend's "
                    "upper bound x this horizon) stays <= slo_ms; a probe's window is run longer (up to "
                    "max_duration_s) until it can tell, else the count is unmeasured. 0: the window's p99 alone")
    max_streams: int = Field(default=64, ge=1, description="the SLO search never tries more streams than this")
    slo_repeats: int = Field(default=3, ge=1,
                             description="the SLO search measures each stream count this many times (fresh phases and "
                                         "processes each) and accepts it only when every repeat meets the SLO")
    gpu_sharing: GpuSharing | SharingModes = Field(
        default="time-slicing",
        description="mps: run the row's GPU instances under a CUDA MPS daemon that edgebench starts and stops "
                    "(nvidia-cuda-mps-control); GPU settings are never changed. A list ([time-slicing, mps]) makes "
                    "it a sweep dimension: every config once per mode (and one SLO search per mode)")
    workers: Literal["warm", "fresh"] = Field(
        default="warm",
        description="warm: a row's instance processes are kept for the next rows of the same model, backend, "
                    "precision and options (only batch or instance count changes; the session is reopened, the "
                    "process and its imported framework are reused); fresh: new processes for every row. The "
                    "row's `workers` column says which")
    worker_start: Literal["spawn", "forkserver"] = Field(
        default="spawn",
        description="how warm workers start: spawn (each a new interpreter that imports its framework, as a deployed "
                    "process does) or forkserver (forked from one server process that imported the framework once and "
                    "touched no GPU: a fresh process and CUDA context each, set-up ~3x shorter; but forked workers "
                    "share the framework's memory pages, and 8 torch instances on 2 CPU cores ran ~10% faster that way "
                    "than spawned: docs/results/worker-start.md). The row's `workers` column says which")
    kernel_profile_steps: int = Field(default=0, ge=0, json_schema_extra=PER_ROW,
                                      description="GPU: profile this many inferences in the row's probe process "
                                                  "(never a measured one) to get tensor_core_time_pct (0 = off)")

    def per_row_values(self) -> dict[str, Any]:
        """The fields every RunConfig carries (marked per_row), by name."""
        return {name: getattr(self, name) for name in per_row_fields()}

    @property
    def sharing_modes(self) -> list[str]:
        """gpu_sharing as a list of modes (a single mode is a list of one), repeats dropped."""
        given = self.gpu_sharing
        return [given] if isinstance(given, str) else list(dict.fromkeys(given))


def per_row_fields() -> tuple[str, ...]:
    """Names of the run fields marked per_row, in declaration order."""
    return tuple(name for name, info in RunSection.model_fields.items()
                 if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get("per_row"))


class TelemetrySection(Section):
    samplers: Names = ["host"]
    interval_s: float = Field(default=0.1, ge=0.005, allow_inf_nan=False)
    idle_baseline_s: float = Field(default=0.0, ge=0.0, allow_inf_nan=False)


class PowerSection(Section):
    modes: PowerModes | None = Field(
        default=None, description="Jetson nvpmodel modes to sweep, by name or id, e.g. [MAXN, 30W]; null = leave the power "
                          "mode alone")
    allow_changes: bool = Field(default=False, description="must be true for power.modes: changing the mode needs root and "
                                                   "affects the whole board (restored at the end)")
    settle_s: float = Field(default=5.0, ge=0.0, allow_inf_nan=False,
                            description="wait after switching a mode before the next row")
    calibration: Mapping_ | None = Field(
        default=None, description="on-board sensor vs a wall meter: {scale, offset_w, source[, power_scope]}; rows get "
                          "power_w_mean_calibrated = power_w_mean * scale + offset_w (raw columns unchanged)")
    calibration_file: str | None = Field(
        default=None, description="YAML with per-board calibrations: {boards: {<board model>: {scale, offset_w, source}}}; "
                          "the board comes from the device tree / DMI")


class CooldownSection(Section):
    enabled: bool = Field(default=False, description="wait before each row until the GPU/SoC temperature and clock are back "
                                             "near the idle baseline read before the first row (or timeout_s)")
    source: Literal["auto", "sysfs", "nvml"] = Field(
        default="auto", description="thermal probe: sysfs thermal zones + GPU devfreq (Jetson), nvml (discrete GPU), "
                            "auto = nvml when the sweep uses a CUDA GPU, else sysfs")
    sysfs_root: str = Field(default="/", description="root of the sysfs tree the sysfs probe reads (a fixture tree in tests)")
    temp_margin_c: float = Field(default=3.0, ge=0.0, allow_inf_nan=False,
                                 description="settled when within this of the idle temperature")
    clock_margin_pct: float = Field(default=10.0, ge=0.0, allow_inf_nan=False,
                                    description="settled when the clock is within this % of idle")
    timeout_s: float = Field(default=120.0, ge=0.0, allow_inf_nan=False, description="give up waiting after this; the row "
                                                                             "says so")
    poll_s: float = Field(default=1.0, ge=0.01, allow_inf_nan=False, description="seconds between two readings while waiting")


class CalibrationSection(Section):
    source: str = Field(default="synthetic", description="'synthetic', a folder of images / .npy files, or 'labelled': a "
                                                 "subset of accuracy.dataset disjoint from the evaluated images")
    samples: int = Field(default=32, ge=1)
    seed: int = 0


class AccuracySection(Section):
    dataset: str | None = Field(default=None, description="labelled images (class subfolders, or a flat folder + `labels`): "
                                                  "rows get accuracy_top1_pct/top5_pct on run.accuracy_samples of them")
    labels: str | None = Field(default=None, description="labels file '<image> <class index>' per line, for a flat folder")
    weights: str | None = Field(default=None, description="weights for every model of the sweep, overriding the model specs' "
                                                  "(torchvision:IMAGENET1K_V2 or a state_dict file)")


class SearchSection(Section):
    goal: Literal["best", "pareto"] | None = Field(
        default=None, description="adaptive search (bench --search): measure a spread seed set, model the grid, measure "
                                  "next what most likely changes the answer, stop when it is settled; null = the full grid")
    objective: Literal["throughput", "energy", "latency"] = Field(
        default="throughput", description="goal best: highest throughput, lowest energy per inference or lowest latency")
    slo_ms: float | None = Field(default=None, ge=0.001, allow_inf_nan=False,
                                 description="goal best: latency limit (slo_percentile, per batch) on every repeat")
    slo_percentile: Literal["p99", "p95", "p90", "p50"] = Field(
        default="p99", description="the latency percentile slo_ms and the latency objective read")
    power_cap_w: float | None = Field(default=None, ge=0.0, allow_inf_nan=False,
                                      description="goal best: power_w_mean limit on every repeat")
    max_accuracy_drop_pct: float | None = Field(default=None, ge=0.0, allow_inf_nan=False,
                                                description="goal best: accuracy drop vs FP32 limit, percentage points")
    budget_rows: int | None = Field(default=None, ge=1,
                                    description="measure at most this many rows (null: the plan's measurable rows)")
    seed: int = Field(default=0, description="picks the first seed configuration (the rest are spread from it)")
    surrogate: Literal["gp", "loglinear"] = Field(
        default="gp", description="the model of each metric over the grid (docs/results/search: why gp)")
    explore_min_prob: float = Field(default=0.05, gt=0.0, lt=1.0, allow_inf_nan=False,
                                    description="explore while some configuration changes the answer with at least this "
                                                "probability (with no answer yet: while P(some candidate meets "
                                                "every limit) >= explore_min_prob / 5)")


class ProfileFile(Section):
    """What a profile file may hold (after `extends:` is merged): top-level scalars and one model per section."""

    name: str = Field(description="profile name (default: the file's name)")
    description: str = Field(default="", description="one line shown by `edgebench profiles`")
    device: str = Field(default="host", description="kind of device: host, dgpu, jetson")
    sweep: SweepSection = SweepSection()
    run: RunSection = RunSection()
    telemetry: TelemetrySection = TelemetrySection()
    calibration: CalibrationSection = CalibrationSection()
    power: PowerSection = PowerSection()
    accuracy: AccuracySection = AccuracySection()
    cooldown: CooldownSection = CooldownSection()
    search: SearchSection = SearchSection()


# the section fields of ProfileFile and their models, in order (written out: importable without pydantic; a test
# compares them with ProfileFile)
SECTION_MODELS: dict[str, type[Section]] = {
    "sweep": SweepSection, "run": RunSection, "telemetry": TelemetrySection, "calibration": CalibrationSection,
    "power": PowerSection, "accuracy": AccuracySection, "cooldown": CooldownSection, "search": SearchSection,
}
SECTIONS: tuple[str, ...] = tuple(SECTION_MODELS)
