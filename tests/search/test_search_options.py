"""bench's search flags into the profile's search section (commands.options.search_overrides): --slo-ms is the
search's latency limit without --rate, and the same flags set the limits of a search the profile names
(search.goal) as of one --search names; without a search they stay the answer bench prints at its end."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgebench.commands.options import apply_overrides, parse_bench_args
from edgebench.config.profile import load_profile
from edgebench.errors import ConfigError, EdgebenchError


def _profile(tmp_path: Path, search: str = ""):
    path = tmp_path / "p.yaml"
    path.write_text("extends: smoke\n" + (f"search:\n  {search}\n" if search else ""))
    return load_profile(str(path))


def test_search_flags_set_the_search_section_and_slo_ms_is_its_limit(tmp_path):
    prof = apply_overrides(_profile(tmp_path), parse_bench_args(
        ["--search", "best", "--slo-ms", "5", "--slo-percentile", "p90", "--power-cap-w", "30", "--objective",
         "energy", "--max-accuracy-drop", "1", "--budget-rows", "12", "--search-seed", "3"]))
    s = prof.search
    assert (s.goal, s.objective, s.slo_ms, s.slo_percentile, s.power_cap_w, s.max_accuracy_drop_pct, s.budget_rows,
            s.seed) == ("best", "energy", 5.0, "p90", 30.0, 1.0, 12, 3)
    assert prof.run.slo_ms is None  # not the streams search's SLO


def test_a_search_the_profile_names_takes_its_limits_from_the_same_flags(tmp_path):
    """search.goal in the profile, no --search: --slo-ms / --slo-percentile / --power-cap-w / --objective are the
    search's (before: --slo-ms went to run.slo_ms and was refused, and the others were silently dropped)."""
    prof = apply_overrides(_profile(tmp_path, "goal: best"), parse_bench_args(
        ["--slo-ms", "1.6", "--slo-percentile", "p50", "--power-cap-w", "10", "--objective", "latency",
         "--budget-rows", "4"]))
    s = prof.search
    assert (s.goal, s.slo_ms, s.slo_percentile, s.power_cap_w, s.objective, s.budget_rows) == (
        "best", 1.6, "p50", 10.0, "latency", 4)
    assert prof.run.slo_ms is None
    # with --rate, --slo-ms is the streams search's: one adaptive search at a time
    with pytest.raises(ConfigError, match="one adaptive search at a time"):
        apply_overrides(_profile(tmp_path, "goal: best"), parse_bench_args(["--rate", "50", "--slo-ms", "10"]))
    # a Pareto search takes no limits
    with pytest.raises(ConfigError, match="apply to goal best"):
        apply_overrides(_profile(tmp_path, "goal: pareto"), parse_bench_args(["--power-cap-w", "10"]))


def test_without_a_search_the_flags_leave_the_search_section_alone(tmp_path):
    prof = apply_overrides(_profile(tmp_path), parse_bench_args(["--objective", "latency", "--power-cap-w", "10"]))
    assert prof.search.goal is None and prof.search.power_cap_w is None and prof.search.objective == "throughput"
    with pytest.raises(EdgebenchError, match="^--budget-rows needs --search best|pareto"):
        apply_overrides(_profile(tmp_path), parse_bench_args(["--budget-rows", "3"]))
    with pytest.raises(ConfigError, match=r"^--slo-ms: field 'run.slo_ms': needs run.rate_hz"):
        apply_overrides(_profile(tmp_path), parse_bench_args(["--slo-ms", "5"]))
