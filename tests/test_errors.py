"""An exception formatted into a reason a user reads: never 'AssertionError: ' with nothing after it (issue 37)."""

from __future__ import annotations

import pytest

from edgebench.errors import exc_message, exc_text


def _bare_assert(value: int) -> None:  # a library's bare `assert value == 2` (pytest rewrites asserts in tests)
    if value != 2:
        raise AssertionError


def test_a_message_less_exception_says_where_it_was_raised():
    with pytest.raises(AssertionError) as info:
        _bare_assert(1)
    text = exc_text(info.value)
    line = _bare_assert.__code__.co_firstlineno + 2
    assert text.startswith("AssertionError: no message, raised at ")  # the file's last three path parts
    assert text.endswith(f"/tests/test_errors.py:{line} in _bare_assert: raise AssertionError")
    assert exc_text(RuntimeError()) == "RuntimeError: no message (RuntimeError())"  # never raised: no frame


def test_a_message_is_kept_first_line_and_limit_on_request():
    exc = ValueError("bad shape\nsecond line")
    assert exc_text(exc) == "ValueError: bad shape\nsecond line"
    assert exc_text(exc, first_line=True) == "ValueError: bad shape"
    assert exc_message(exc, first_line=True, limit=3) == "bad"


def test_an_instance_reason_of_a_bare_assert_names_its_line():
    from edgebench.runner.worker import describe

    with pytest.raises(AssertionError) as info:
        _bare_assert(3)
    assert describe(info.value).startswith("AssertionError: no message, raised at ")
    assert "/tests/test_errors.py:" in describe(info.value)


def test_one_wording_for_a_dead_child_whichever_stage_started_it():
    """exit_text lives below every stage: the runner re-exports it, models.export (which may not import the runner)
    uses it, so an export killed by the OOM killer reads 'died with SIGKILL' like an instance row does."""
    from edgebench.errors import exit_text
    from edgebench.runner import child_process

    assert child_process.exit_text is exit_text
    assert exit_text(-9) == "died with SIGKILL"
    assert exit_text(-200) == "died with signal 200"
    assert exit_text(3) == "exited with code 3"
