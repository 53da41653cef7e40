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
