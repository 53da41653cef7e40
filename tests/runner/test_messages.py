"""runner/messages.py: every message kind survives a real multiprocessing Pipe to a spawned process and back, as
the same type with the same fields; messages cannot be changed after they are made."""

from __future__ import annotations

import dataclasses

import pytest

from edgebench.config.run_config import RunConfig
from edgebench.runner import child_process, messages
from edgebench.runner.messages import (
    Done,
    Error,
    Exit,
    Go,
    Idle,
    Job,
    Phase,
    Primed,
    Ready,
    Retire,
)

SAMPLES = [
    Go(), Exit(), Primed(4242), Phase(1, "warmup"), Ready(0, 37), Done(2, 1000, "/tmp/w/instance2.npy"),
    Error(1, "measure", "RuntimeError: boom"), Error(None, "preload", "ImportError: no torch"), Idle(0),
    Retire(3, "RuntimeError: close failed"),
]


def echo(conn) -> None:
    """Target: send back every message received, with its type's name as the child sees it, until Exit."""
    while True:
        msg = conn.recv()
        conn.send((type(msg).__module__, type(msg).__name__, msg))
        if isinstance(msg, Exit):
            return


def make_cfg() -> RunConfig:
    return RunConfig(model="null", backend="null", precision="fp32", batch=2, placements=("cpu", "cpu"), seed=7)


def test_every_kind_round_trips_through_a_pipe_to_a_spawned_process():
    job = Job(make_cfg(), None, (0, 1), "/tmp/w", True)  # type: ignore[arg-type]
    parent_end, child_end = child_process.context().Pipe(duplex=True)
    child = child_process.spawn(echo, (child_end,), name="test-echo")
    child_end.close()
    try:
        for msg in [job, *SAMPLES[2:], Go(), Go(1_234_567_890_123), Exit()]:
            parent_end.send(msg)
            assert parent_end.poll(60), f"no echo of {msg!r}"
            module, name, back = parent_end.recv()
            assert (module, name) == ("edgebench.runner.messages", type(msg).__name__)
            assert type(back) is type(msg)
            if isinstance(msg, Job):
                assert back.cfg.config_hash() == msg.cfg.config_hash() and back.instances == (0, 1)
                assert back.keep is True and back.workdir == "/tmp/w"
            else:
                assert back == msg
        child.join(30)
        assert child.exitcode == 0
    finally:
        parent_end.close()
        child_process.stop([child], grace_s=1.0)


def test_messages_are_frozen_and_kinds_differ_by_type_not_position():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Ready(0, 1).instance = 2  # type: ignore[misc]
    assert Primed(7) != Idle(7)  # a pid and an instance index are not the same message
    assert Primed(7).pid == 7 and Idle(7).instance == 7
    assert Error(None, "preload", "x").instance is None


def test_every_message_class_is_in_one_of_the_unions_and_sampled():
    kinds = {c for c in vars(messages).values()
             if isinstance(c, type) and dataclasses.is_dataclass(c) and c.__module__ == messages.__name__}
    assert set(messages.Message.__args__) == kinds  # type: ignore[attr-defined]
    assert {type(m) for m in SAMPLES} | {Job} == kinds
    assert all(c.__dataclass_params__.frozen for c in kinds)  # type: ignore[attr-defined]
