"""models/in_child.py: a model-building step in a spawned process, its result and every way it can end, seen from
the harness (real spawned processes)."""

from __future__ import annotations

import os
import signal

import pytest

from edgebench.errors import ModelError
from edgebench.models.in_child import run_in_child


def sidecar(n: int) -> dict:
    return {"pid": os.getpid(), "n": n}


def bare_assert(_n: int) -> dict:
    raise AssertionError  # a library's bare `assert`: no message


def refuses(_n: int) -> dict:
    raise ModelError("tiny: the step refuses this graph")


def killed(_n: int) -> dict:
    os.kill(os.getpid(), signal.SIGKILL)
    return {}


def test_the_step_runs_in_another_process_and_its_result_comes_back():
    out = run_in_child("tiny", "int8 quantization", sidecar, 3)
    assert out["n"] == 3 and out["pid"] != os.getpid()


def test_a_message_less_error_says_where_it_was_raised_not_where_it_was_re_raised():
    with pytest.raises(ModelError) as err:
        run_in_child("tiny", "int8 quantization", bare_assert, 1)
    text = str(err.value)
    assert text.startswith("tiny: int8 quantization failed: AssertionError: no message, raised at ")
    assert "tests/models/test_in_child.py:" in text and "in bare_assert" in text
    assert "edgebench/models/in_child.py" not in text  # before: "raised at edgebench/models/in_child.py:55 ... raise payload"


def test_a_model_error_crosses_as_raised_and_a_killed_step_is_named():
    with pytest.raises(ModelError, match=r"^tiny: the step refuses this graph$"):
        run_in_child("tiny", "fp16 conversion", refuses, 1)
    with pytest.raises(ModelError, match=r"^tiny: the export process died with SIGKILL before it finished"):
        run_in_child("tiny", "export", killed, 1)
