"""Issue 37 as a user meets it: a null-backend row of millions of inferences, run with the CLI, records the harness
process's own peak memory (main_rss_mib_max) and the instance's (rss_mib_max), and neither grows with the inference
count. Before issue 37 the harness held every timestamp several times over (6.5 GiB at 58 million inferences) and an
instance's buffers doubled when full; benchmarks/memory_bounded.py measures the same up to 10^8 inferences."""

from __future__ import annotations

import pytest
from cli_runs import cli, null_profile, read_rows, shared_cache_env


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    return shared_cache_env(tmp_path_factory)


def one_row(env: dict, tmp_path, name: str, duration_s: float) -> dict[str, str]:
    profile = null_profile(tmp_path, name, run={"duration_s": duration_s, "max_duration_s": duration_s * 2,
                                                "min_inferences": 662, "warmup_s": 0.2, "accuracy_samples": 0,
                                                "stability_tolerance_pct": 100.0})
    out = cli(env, "bench", "--device", str(profile), "--out", str(tmp_path / name))
    assert out.returncode == 0, out.stdout + out.stderr
    (run_dir,) = (tmp_path / name).iterdir()
    (row,) = read_rows(run_dir / "results.csv")
    return row


def test_memory_of_harness_and_instance_does_not_grow_with_the_inference_count(env, tmp_path):
    small = one_row(env, tmp_path, "small", 0.1)
    large = one_row(env, tmp_path, "large", 3.0)
    assert int(large["inferences"]) >= 1_000_000 and int(small["inferences"]) < int(large["inferences"]) // 10
    main_small, main_large = float(small["main_rss_mib_max"]), float(large["main_rss_mib_max"])
    # 16 bytes per inference held once would be +15 MiB per million; the chunks (8 MiB a column) and the order
    # statistics' counts are what the large row may add
    assert main_large - main_small < 64.0, (main_small, main_large, large["inferences"])
    assert float(large["rss_mib_max"]) - float(small["rss_mib_max"]) < 64.0, (small["rss_mib_max"], large["rss_mib_max"])
