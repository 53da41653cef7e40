"""Paths the tests share: the repository root and the captured fixtures (tests/fixtures/).

tests/conftest.py sits in tests/, so pytest puts tests/ on sys.path and the tests in tests/<stage>/
import this module (and jetson_sandbox, sshd_server, gpu_fault_backend) by name.
"""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
