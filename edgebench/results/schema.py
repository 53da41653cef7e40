"""The columns of results.csv, in order, each with its unit and meaning.

One row = one RunConfig measured once. Units are in the names (`_ms`, `_mj`, `_w`, `_pct`,
`_ips`, `_mib`, `_s`); an empty cell means "not measured here" and never 0. The required
columns come first so that a results.csv reads well in a spreadsheet.

Counting, the one thing to get right when citing a row: an *inference* is one call of the model on one
batch, so `inferences` counts batches and every `latency_ms_*` is the time of one batch; a *sample* is one
input (one image), so `samples` = inferences * batch and every `*_ips` column (throughput_ips,
per_instance_ips) counts samples per second, as does energy_per_inference_mj (per sample, not per batch).

Every column names its type and the one row step that owns (writes) it. pipeline/row_steps.py lists the steps in the
order they run and refuses, when imported, a column that no listed step owns (ownership_problems); this module refuses
a column declared twice (two owners) when imported; results/row.py refuses a column written by a step not its owner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Column:
    name: str
    unit: str  # "" for labels and identifiers
    description: str
    type: type  # int, float, str or bool; every column is nullable: None <-> an empty cell
    step: str  # the row step that owns (writes) it: pipeline/row_steps.py


STATUSES = ("ok", "skipped", "failed", "invalid")

COLUMNS: list[Column] = [
    # --- what was measured (required)
    Column("model", "", "model name (models/<model>.yaml)", str, "identity"),
    Column("backend", "", "backend that ran it: ort, torch, trt, null", str, "identity"),
    Column("precision", "", "fp32, tf32, fp16, bf16, amp or int8", str, "identity"),
    Column("batch", "samples", "input samples (images) per inference", int, "identity"),
    Column("instances", "", "concurrent instances measured together", int, "identity"),
    Column("mode", "", "process (one OS process per instance) or streams (one process, N streams)", str, "identity"),
    Column("placement", "", "device of each instance joined with '+', e.g. cpu+cpu, gpu+dla0", str, "identity"),
    # --- results (required)
    Column("throughput_ips", "samples/s",
           "input samples (images) per second over the overlap window, summed over instances", float, "metrics"),
    Column("latency_ms_p50", "ms", "median latency of one inference (one batch), all instances pooled", float, "metrics"),
    Column("latency_ms_p90", "ms", "90th percentile latency of one inference (one batch); empty below 64 inferences (empty_reasons "
                                      "says why)", float, "metrics"),
    Column("latency_ms_p99", "ms", "99th percentile latency of one inference (one batch); empty below 662 inferences (empty_reasons "
                                      "says why; the row stays ok)", float, "metrics"),
    Column("power_w_mean", "W", "mean board/package power over the window (energy_j / window_s); empty when not measurable", float, "telemetry"),
    Column("energy_per_inference_mj", "mJ",
           "energy per input sample (per image, not per batch): energy_j * 1000 / samples; empty without energy", float, "energy"),
    Column("status", "", "ok, skipped, failed or invalid; speaks for the headline (throughput, energy): a latency "
                             "percentile too few inferences back is empty, never a reason for invalid", str, "outcome"),
    Column("reason", "", "why the row is skipped, failed or invalid; on any measured row also the notes that leave "
                         "its status as it is (a busy host with its figure, accuracy not compared); empty when ok "
                         "without a note", str, "outcome"),
    # --- identity and provenance
    Column("run_id", "", "the run directory's id (runs/<run_id>)", str, "identity"),
    Column("row_index", "", "position of this config in the planned sweep (0-based)", int, "identity"),
    Column("config_hash", "", "hash of the RunConfig; --resume skips configs with an ok/invalid/skipped row", str, "identity"),
    Column("repeat", "", "index (0-based) of this measurement among run.repeats identical ones (--repeats N); "
                         "the report's intervals are over rows that differ only here", int, "identity"),
    Column("workload", "", "what the row ran on that the axes above do not say, 'key=text' '; '-joined "
                           "(pipeline/workload.py): an external ONNX's content (onnx, sha256) and resolved inputs "
                           "(inputs: name:dtype[dims], N on the batch axis, vocab, fixed value), given shapes, fixed "
                           "values, --data (sha256), weights, data set, labels, int8 calibration settings when not "
                           "the defaults, and the synthetic inputs' seed; rows pool as repeats only when it is equal "
                           "(empty: written before the column existed, unknown, pooled only with another empty one)",
           str, "identity"),
    Column("started_utc", "", "UTC start of the row's measurement, ISO 8601", str, "identity"),
    Column("weights", "", "weights used and their sha256: torchvision:<Enum>.<member> or a file name, then "
                          "'sha256:<16 hex>'; or random-init / from-onnx", str, "setup"),
    Column("threads_per_instance", "threads", "CPU threads given to each instance", int, "identity"),
    Column("threads_note", "", "how threads_per_instance was chosen, e.g. 'auto: 2 cores // 1 instance = 2 (the "
                               "framework's default for one session)'", str, "setup"),
    Column("power_mode", "", "Jetson nvpmodel mode the row ran in, as nvpmodel -q named it after the switch "
                             "(only when power.modes sweeps it; system.json records the mode otherwise)", str, "identity"),
    Column("provider", "", "execution provider / engine actually used, e.g. CPUExecutionProvider", str, "backend"),
    Column("empty_reasons", "", "measured rows: why a column a reader could take for an answer is empty, "
                                "'column[, column]: why', '; '-joined (e.g. 'throttled, throttle_reasons: not "
                                "checked ...': empty throttled means not checked, false means not throttled)", str, "empty_reasons"),
    # --- the window
    Column("window_s", "s", "length of the overlap window [latest instance start, earliest instance end]", float, "metrics"),
    Column("inferences", "batches",
           "inferences completed inside the window, all instances; one inference = one batch (not one sample)", int, "metrics"),
    Column("samples", "samples", "input samples completed inside the window: inferences * batch", int, "metrics"),
    Column("warmup_s", "s", "warm-up each instance ran before the start signal", float, "setup"),
    Column("setup_s", "s", "the row's wall time outside its measured window and warm-up (export, precision, "
                           "prepare, probe, spawn, load, collect, accuracy, write; per phase in row.json 'phases')", float, "setup"),
    Column("probe", "", "which probe process the accuracy_* and tensor_core_* columns come from: 'row 3 (batch 1, "
                        "pid 4242)' ran for this row or is reused from an earlier row of the same model x precision "
                        "x backend x options; empty when the row needed none", str, "setup"),
    Column("workers", "", "the instance processes: 'fresh' (started for this row, run.workers: fresh, streams mode "
                          "or MPS) or 'warm: k of n reused' (run.workers: warm; k ran earlier rows of the same "
                          "model x backend x precision x options, each row still opens a fresh session), with ', m "
                          "forked from the framework server' under run.worker_start: forkserver", str, "setup"),
    # --- latency details
    Column("latency_ms_min", "ms", "fastest inference (one batch)", float, "metrics"),
    Column("latency_ms_mean", "ms", "mean latency of one inference (one batch)", float, "metrics"),
    Column("latency_ms_p95", "ms", "95th percentile latency of one inference (one batch)", float, "metrics"),
    Column("latency_ms_max", "ms", "slowest inference (one batch) inside the window", float, "metrics"),
    Column("per_instance_ips", "samples/s",
           "throughput of each instance in samples (not batches) per second, in instance order, ';'-joined", str, "metrics"),
    Column("stability_pct", "%",
           "largest deviation of a sub-window's throughput from the window mean, % of the mean; invalid above run.stability_tolerance_pct "
           "and, closed loop, above stability_bound_pct", float, "metrics"),
    Column("stability_bound_pct", "%",
           "closed loop: the largest sub-window deviation the row's own per-inference jitter explains, % of the mean: "
           "z * sigma, sigma from the gaps between completions as a renewal process, z for 99% over run.sub_windows "
           "sub-windows, Bonferroni (3.09 at 5); the row is invalid only when stability_pct exceeds both this and "
           "run.stability_tolerance_pct; empty for fixed-rate rows (the tolerance alone)", float, "metrics"),
    # --- power and energy
    Column("power_w_max", "W", "highest power sample inside the window", float, "telemetry"),
    Column("energy_j", "J", "energy over the window, all instances", float, "telemetry"),
    Column("energy_source", "",
           "counter:<hw> (hardware energy counter), integrated (power samples integrated), or none: <why>", str, "telemetry"),
    Column("power_scope", "",
           "what the power/energy columns cover: gpu-board (NVML: the GPU board(s) the row used, summed), "
           "cpu-package (RAPL package domains), soc-total (Jetson INA3221 total: module input, or a sum of rails "
           "where the board has no input monitor, as telemetry_notes says)", str, "telemetry"),
    Column("power_w_idle", "W", "idle power measured before the sweep (empty without an idle baseline)", float, "energy"),
    Column("energy_per_inference_dynamic_mj", "mJ",
           "energy per input sample above the idle baseline: (power_w_mean - power_w_idle) * window_s * 1000 / samples", float, "energy"),
    Column("power_w_mean_calibrated", "W",
           "power_w_mean * scale + offset_w from power.calibration (a per-board fit of the on-board sensor against "
           "a wall meter); empty without a calibration. power_w_mean stays the raw sensor reading", float, "calibration"),
    Column("energy_per_inference_calibrated_mj", "mJ",
           "energy per input sample from power_w_mean_calibrated: calibrated W * window_s * 1000 / samples", float, "calibration"),
    Column("power_calibration", "", "the calibration applied: scale, offset_w and its source (the meter and "
                                    "setup it was fitted against); empty without one", str, "calibration"),
    Column("telemetry_source", "", "sampler(s) the power/utilization columns come from, e.g. host", str, "telemetry"),
    Column("telemetry_samples", "samples", "telemetry samples inside the window", int, "telemetry"),
    Column("telemetry_interval_s", "s", "sampling interval the sampler used", float, "telemetry"),
    Column("telemetry_notes", "", "stated absences from the samplers, e.g. 'RAPL not readable: ...'", str, "telemetry"),
    # --- utilization
    Column("cpu_util_pct_mean", "%", "mean busy share of all host CPU cores over the window", float, "telemetry"),
    Column("proc_cpu_pct_mean", "%", "mean CPU of the instance processes, % of one core (can exceed 100)", float, "telemetry"),
    Column("others_cpu_pct_mean", "%", "mean share of all host CPU cores busy with processes other than the row's "
                                       "instances over the window: cpu_util_pct - proc_cpu_pct / cores per host "
                                       "sample (other users' jobs, the system, the harness itself; "
                                       "telemetry/host_share.py)", float, "busy_host"),
    Column("cpu_taken_by_others_pct", "%", "share of the CPU the instances could use (a core per CPU thread, one per "
                                           "GPU/DLA instance, at most the host's) that other processes took, mean "
                                           "over the window: max(0, others' cores - cores the instances left free) "
                                           "/ their cores", float, "busy_host"),
    Column("others_gpu_pct_mean", "%", "GPU rows: mean SM time of the row's GPU(s) NVML attributes to processes other "
                                       "than the row's (nvmlDeviceGetProcessUtilization); empty where NVML does not "
                                       "attribute it (telemetry_notes says why)", float, "busy_host"),
    Column("host_busy", "", "true when other processes took a material share during the window: "
                            "cpu_taken_by_others_pct or others_gpu_pct_mean >= 10 (the reason says so with the "
                            "figure; the status stays what the window measured); false when what was read stayed below: "
                            "the CPU always, the GPU only where others_gpu_pct_mean has a value (NVML attributes "
                            "processes on a discrete GPU, not on a Jetson, nor across a container's pid namespace); "
                            "empty when not checked (empty_reasons says why)", bool, "busy_host"),
    Column("rss_mib_max", "MiB", "peak resident memory of the instance processes (and children), summed", float, "telemetry"),
    Column("main_rss_mib_max", "MiB", "peak resident memory of the edgebench process itself (the one that starts the "
                                      "instances and collects and summarises their timestamps) from the row's start "
                                      "to its files written (Linux VmHWM, reset per row); bounded whatever the "
                                      "inference count (issue 37)", float, "harness"),
    Column("mem_used_mib_max", "MiB", "peak system memory in use (total - available)", float, "telemetry"),
    Column("gpu_util_pct_mean", "%", "mean GPU utilization over the window (GPU samplers only)", float, "telemetry"),
    Column("gpu_temp_c_max", "C", "highest GPU temperature inside the window (GPU samplers only)", float, "telemetry"),
    Column("gpu_sm_clock_mhz_mean", "MHz", "mean SM clock inside the window (GPU samplers only)", float, "telemetry"),
    Column("temp_c_start", "C", "GPU/SoC temperature read after any cooldown, before the row was prepared and its instances started", float, "thermal"),
    Column("temp_c_end", "C", "GPU/SoC temperature read when the row's measurement returned (its instances stopped)", float, "thermal"),
    Column("cooldown_s", "s", "seconds the sweep waited before this row for the temperature and clock to return "
                              "near the idle baseline (run.cooldown; empty when cooldown is off)", float, "thermal"),
    Column("cooldown_note", "", "how the cooldown ended: 'settled: ...' or 'timeout after N s: ...' with the "
                                "temperature and clock against the baseline, or why it could not read them", str, "thermal"),
    Column("throttled", "", "true when the device reported thermal/power throttling in the window (row -> invalid)", bool, "telemetry"),
    Column("throttle_reasons", "", "every clock-event reason the device reported inside the window, ';'-joined", str, "telemetry"),
    # --- accuracy vs the FP32 reference on fixed inputs
    Column("accuracy_samples", "samples", "inputs compared against the FP32 reference (and scored against labels "
                                          "when accuracy.dataset is set: the labelled images evaluated)", int, "setup"),
    Column("calibration_source", "",
           "int8 rows: the calibration data the QDQ scales came from (synthetic, a folder, or labelled: a "
           "subset of accuracy.dataset disjoint from the evaluated images; files in row.json), count, seed, sha256; "
           "then what the int8 build changed: an old opset upgraded to 13 or per-tensor weights, nodes left in float", str, "setup"),
    Column("accuracy_top1_agreement_pct", "%", "share of inputs whose top-1 class equals the FP32 reference's", float, "accuracy"),
    Column("accuracy_max_abs_err", "", "largest absolute difference of any output value vs FP32 (output units)", float, "accuracy"),
    Column("accuracy_cosine_min", "", "lowest cosine similarity of an output vector vs FP32 (1 = identical)", float, "accuracy"),
    Column("accuracy_outputs", "", "the named outputs compared with FP32, ';'-joined (worst of them in the columns "
                                   "above; top-1 only over class-score outputs [N, num_classes])", str, "accuracy"),
    Column("accuracy_per_output", "", "every output's cosine min / max abs err (/ top-1) vs FP32, '; '-joined", str, "accuracy"),
    # --- accuracy against labels (accuracy.dataset), outside the measured window
    Column("accuracy_top1_pct", "%", "share of the evaluated labelled images whose label is the top output", float, "labelled"),
    Column("accuracy_top5_pct", "%", "share whose label is among the 5 top outputs (empty below 5 classes)", float, "labelled"),
    Column("accuracy_dataset", "", "labelled data set folder the accuracy columns come from", str, "labelled"),
    Column("accuracy_skipped", "images", "labelled images that could not be read and were skipped (not scored; "
                                         "the row folder's accuracy_subset.json names them)", int, "labelled"),
    Column("accuracy_subset_sha256", "", "hash of the evaluated (image, label) list; the list is in the row "
                                         "folder's accuracy_subset.json", str, "labelled"),
    Column("tensor_core_time_pct", "%", "share of GPU kernel time in tensor-core kernels, from a profiled pass outside the window", float, "tensor_cores"),
    Column("tensor_core_evidence", "", "what shows tensor cores / the precision ran (top kernels, engine layer precisions)", str, "tensor_cores"),
    Column("options", "", "backend options of the row, e.g. cuda_graph=True;channels_last=True", str, "setup"),
    # --- load shape and GPU sharing (closed loop, fixed-rate streams, SLO search; time-slicing or MPS)
    Column("scenario", "", "closed-loop (next inference when the last is done), fixed-rate (each instance an "
                           "open-loop stream at rate_per_stream_hz) or slo-search (a fixed-rate probe of a search)", str, "identity"),
    Column("gpu_sharing", "", "how the row's GPU instances shared the GPU: time-slicing (default) or mps "
                              "(an MPS daemon edgebench started for the row); empty without a CUDA placement", str, "identity"),
    Column("rate_per_stream_hz", "1/s", "scheduled arrivals (inferences) per second of each stream", float, "load"),
    Column("arrival", "", "how a fixed-rate row's arrivals sat in time (run.arrival): random (uniform phase per "
                          "stream, drawn per repeat), even (phases spread evenly over one period), poisson "
                          "(exponential gaps) or aligned (every stream at once); closed for a closed loop", str, "load"),
    Column("arrival_seed", "", "the seed the random / poisson arrivals were drawn from (stream i: numpy "
                               "default_rng([arrival_seed, i])); empty for even, aligned and closed loops", int, "load"),
    Column("offered_rate_hz", "1/s", "scheduled arrivals per second, all streams: rate_per_stream_hz * instances", float, "load"),
    Column("achieved_rate_hz", "1/s", "inferences completed per second inside the window, all streams", float, "load"),
    Column("queue_ms_p99", "ms", "fixed-rate: 99th percentile wait between an inference's arrival and its start", float, "load"),
    Column("service_ms_p50", "ms", "fixed-rate: median time from an inference's start to its end (no queueing)", float, "load"),
    Column("latency_trend_ms_per_s", "ms/s",
           "fixed-rate: how fast the latency of one inference (one batch), end - scheduled arrival, grows with "
           "arrival time over the window, ms per s: ~0 while the device keeps up, (offered / served - 1) * 1000 while a backlog grows (10 ms/s = 1% "
           "overload); the slope through 20 bins' median latencies (runner/backlog.py). Since issue 54 it no longer "
           "decides the row's validity (backlog_growth_lo_per_s does); "
           "empty below 80 inferences (empty_reasons says why) and for closed-loop rows", float, "trend"),
    Column("latency_trend_lo_ms_per_s", "ms/s",
           "fixed-rate: lower bound of the 95% interval of latency_trend_ms_per_s (the latency of one inference (one "
           "batch) gained per s of arrivals): Newey-West over the bins and a critical value for their count, so it "
           "holds for autocorrelated queueing, where an interval from the inferences themselves would not",
           float, "trend"),
    Column("latency_trend_hi_ms_per_s", "ms/s", "fixed-rate: upper bound of the 95% interval of "
           "latency_trend_ms_per_s (the latency of one inference (one batch) gained per s of arrivals)", float, "trend"),
    Column("backlog_growth_per_s", "1/s",
           "fixed-rate: how fast the backlog (inferences scheduled to arrive minus inferences completed, all streams) "
           "grew over the window (periodic streams: whole periods to its end; Poisson: up to the earliest of the "
           "streams' last served arrivals), per s: ~0 while the device keeps up, offered - served under overload "
           "(runner/backlog_growth.py). The row is invalid when "
           "backlog_growth_lo_per_s > 0 (an exact sign-flip test over 16 sub-windows shows growth at 99%); empty "
           "with the latency trend", float, "trend"),
    Column("backlog_growth_lo_per_s", "1/s",
           "fixed-rate: lower bound of the 98% interval of backlog_growth_per_s (99% one-sided), inverted from the "
           "sign-flip test of the 16 sub-windows' increments: nothing assumed of their scale; above 0: invalid",
           float, "trend"),
    Column("backlog_growth_hi_per_s", "1/s", "fixed-rate: upper bound of the 98% interval of backlog_growth_per_s "
           "(99% one-sided)", float, "trend"),
    Column("slo_ms", "ms", "slo-search: the p99 latency bound the probe was judged against", float, "slo"),
    Column("slo_met", "", "slo-search: true when the row is ok and latency_ms_p99 <= slo_ms, false when it missed "
                          "or failed, empty when unmeasured (slo_verdict)", bool, "slo"),
    Column("slo_verdict", "", "slo-search: met (ok, p99 <= slo_ms, LoadGen's early stopping shows it at 99% over "
                              "slo_queries with slo_overlatency over, and p99 + slo_growth_bound_ms <= slo_ms), missed "
                              "(p99 over slo_ms; the p99 of slo_queries over it; a growing backlog that breaks it "
                              "within slo_horizon_s; or without a p99: enough queries over it to put any p99 over it), "
                              "unmeasured (too few inferences for a p99 judgement, an invalid row under the SLO, a p99 "
                              "early stopping cannot show, or a window too short to bound the growth over the "
                              "horizon; the reason says which) or failed", str, "slo"),
    Column("slo_horizon_s", "s", "slo-search: how long the verdict must hold (run.slo_horizon_s, --horizon-s; 0: the "
                                 "window alone): met needs latency_ms_p99 + slo_growth_bound_ms <= slo_ms", float, "slo"),
    Column("slo_growth_bound_ms", "ms", "slo-search: the latency growth the window cannot exclude over the horizon: "
                                        "max(latency_trend_hi_ms_per_s, 0) x slo_horizon_s (empty without a trend "
                                        "or a horizon)", float, "slo"),
    Column("slo_queries", "inferences", "slo-search: the window's queries as LoadGen counts them: the inferences it "
                                        "served and the arrivals scheduled in it still queued at its end (their "
                                        "schedule drawn again from the row's seed); empty when a stream's schedule "
                                        "did not match what it recorded", int, "slo"),
    Column("slo_overlatency", "inferences", "slo-search: those of slo_queries over slo_ms (a queued one when it had "
                                            "waited longer than slo_ms at the window's end): LoadGen's early "
                                            "stopping is met when P(Binomial(slo_queries, 0.01) <= this) <= 1%", int,
           "slo"),
    # --- TensorRT engines (trt backend)
    Column("dla_fallback_layers", "layers",
           "per DLA target: GPU layers the TensorRT builder put on the GPU instead (gpu_fallback; 'TYPE: name', "
           "REFORMAT copies counted apart) and how many DLA subgraphs the rest became (one per DLA loadable, "
           "not layers), e.g. 'dla0: 1 GPU layer [SOFTMAX: prob]; 1 DLA subgraph'", str, "backend"),
    Column("dla_core_check", "", "ORT TensorRT EP rows on a DLA: the core requested, whether ORT's provider options "
           "hold it, and that the core TensorRT ran on is unverified (ORT does not report it)", str, "backend"),
    Column("engine_build_s", "s", "seconds TensorRT spent building this row's engines (empty when all came from the cache)", float, "backend"),
    Column("engine_cache", "", "per target: engine cache hit, or why it was built/rebuilt (stale, foreign, corrupt)", str, "backend"),
    # --- inputs (any ONNX: several named inputs, dtypes, shapes)
    Column("input_shapes", "", "every input fed, name:dtype[shape] as the graph takes it (the batch on each "
                               "input's batch axis), ';'-joined", str, "setup"),
    Column("batch_note", "", "set when the model's graph fixes the batch (the row runs at that batch only) and names "
                             "inputs with no batch axis (fed as is at every batch)", str, "setup"),
    # --- artifacts
    Column("onnx_sha256", "", "sha256 of the ONNX file the backend prepared from", str, "setup"),
    Column("artifact_dir", "", "folder of this row's per-row files (latencies, telemetry timeline), relative to the run", str, "setup"),
    Column("edgebench_version", "", "edgebench version that wrote the row", str, "identity"),
]

COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)
COLUMN_TYPES: dict[str, type] = {c.name: c.type for c in COLUMNS}
COLUMN_STEPS: dict[str, str] = {c.name: c.step for c in COLUMNS}


class SchemaError(ValueError):
    """The schema contradicts itself: a column owned by no row step, or declared (owned) twice."""


def ownership_problems(columns: list[Column], steps: tuple[str, ...] | None = None) -> list[str]:
    """What is wrong with who owns which column: empty when every column is declared once, has one of the four types
    and (given the row steps) is owned by one of `steps`, and every step owns a column."""
    problems = []
    seen: dict[str, str] = {}
    for col in columns:
        if col.name in seen:
            problems.append(f"column {col.name!r} is owned by two steps: {seen[col.name]!r} and {col.step!r}")
        seen.setdefault(col.name, col.step)
        if steps is not None and col.step not in steps:
            problems.append(f"column {col.name!r} is owned by no row step (no step is named {col.step!r})")
        if col.type not in (int, float, str, bool):
            problems.append(f"column {col.name!r} has type {col.type!r}, not int, float, str or bool")
    idle = [s for s in steps or () if s not in {c.step for c in columns}]
    if idle:
        problems.append(f"row step(s) {', '.join(idle)} own no column")
    return problems


if _problems := ownership_problems(COLUMNS):
    raise SchemaError("; ".join(_problems))


REQUIRED = (
    "model", "backend", "precision", "batch", "instances", "mode", "placement", "throughput_ips",
    "latency_ms_p50", "latency_ms_p90", "latency_ms_p99", "power_w_mean", "energy_per_inference_mj",
    "status", "reason",
)


def column(name: str) -> Column:
    for col in COLUMNS:
        if col.name == name:
            return col
    raise KeyError(f"no results column {name!r}")



class ColumnTypeError(ValueError):
    """A value of the wrong type for its column: an internal error of the part that wrote it."""


def type_problem(name: str, value: Any) -> str | None:
    """None when `value` fits column `name` (None always does), else what is wrong, e.g. "int column, got str '3'".

    int: an int (numpy integers too), never a bool; float: a float or an int (an int is stored as written,
    e.g. warmup_s 2 -> "2"), never a bool; bool: True/False (numpy bool too); str: text, or a list/tuple of
    scalars that the store joins with ';'."""
    if value is None:
        return None
    want = COLUMN_TYPES[name]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalar
        value = value.item()
    if want is bool:
        ok = isinstance(value, bool)
    elif want is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif want is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        ok = isinstance(value, str) or (isinstance(value, (list, tuple))
                                        and all(not isinstance(v, (dict, list, tuple)) for v in value))
    if ok:
        return None
    shown = repr(value)
    return f"{want.__name__} column, got {type(value).__name__} {shown[:60]}"
