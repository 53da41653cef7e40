"""Row phases and the default CPU threads (issue 19)."""

from __future__ import annotations

import time

from edgebench.config.profile import load_profile
from edgebench.pipeline.phases import PhaseClock, setup_s
from edgebench.pipeline.plan import threads_for, threads_note


def test_phase_clock_maps_runner_phases_and_counts_setup_outside_window_and_warmup():
    clock = PhaseClock()
    with clock("export"):
        time.sleep(0.02)
    clock.add_runner({"probe": 0.5, "spawn": 1.0, "load": 0.25, "warmup": 2.0, "load_warmup": 3.25,
                      "measure": 5.0, "collect": 0.5}, runner_wall_s=10.0)
    rec = clock.record()
    assert rec["window"] == 5.0 and rec["warmup"] == 2.0 and rec["spawn"] == 1.0 and rec["probe"] == 0.5
    assert "measure" not in rec and "load_warmup" not in rec  # no double counting of the lump
    assert abs(rec["runner_other"] - (10.0 - 9.25)) < 1e-9
    assert rec["export"] >= 0.02
    assert abs(setup_s(rec, 10.0) - 3.0) < 1e-9  # a 10 s row: all but window (5) and warm-up (2)
    assert rec["setup"] == 0.0  # this clock's own wall time (~0.02 s) is below the made-up window: clamped
    assert setup_s({"window": 3.0, "warmup": 1.0}, 3.5) == 0.0  # never negative


def test_runner_without_per_instance_phases_keeps_its_load_warmup_lump():
    clock = PhaseClock()
    clock.add_runner({"load_warmup": 2.0, "measure": 1.0, "collect": 0.1}, runner_wall_s=3.1)
    rec = clock.record()
    assert rec["load_warmup"] == 2.0 and rec["window"] == 1.0 and rec["runner_other"] < 1e-6


def test_auto_threads_are_what_a_users_own_session_gets_and_say_so():
    prof = load_profile("host")
    assert threads_for(prof, 1, 2) == 2  # one instance on this 2-core machine: every core, as ORT/torch default
    assert threads_for(prof, 1, 16) == 16 and threads_for(prof, 2, 16) == 8 and threads_for(prof, 4, 2) == 1
    assert threads_for(prof, 3, 16) == 5 and threads_for(prof, 1, 1) == 1
    assert threads_note(prof, 1, 2, 2) == "auto: 2 cores // 1 instance = 2 (the framework's default for one session)"
    assert threads_note(prof, 2, 16, 8) == "auto: 16 cores // 2 instances = 8, cores split across instances"
    assert threads_note(prof, 4, 2, 1).endswith("= 1, cores split across instances (the instances share cores)")
    fixed = prof.with_overrides("run", threads_per_instance=4)
    assert threads_for(fixed, 1, 2) == 4 and threads_note(fixed, 1, 2, 4) == "run.threads_per_instance: 4"
