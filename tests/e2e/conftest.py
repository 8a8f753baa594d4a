"""Session fixture: a running seed sandbox (started here, or reused if already up).

A sandbox this fixture starts is stopped at the end of the session unless
SANDBOX_KEEP=1; a sandbox that was already running is left running.
"""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sandbox_helpers import Sandbox  # noqa: E402


@pytest.fixture(scope="session")
def sandbox():
    sb = Sandbox()
    started = sb.ensure_up()
    if not started:
        sb.reset()  # a reused sandbox may have been changed by earlier runs
    yield sb
    if started and os.environ.get("SANDBOX_KEEP") != "1":
        sb.down()
