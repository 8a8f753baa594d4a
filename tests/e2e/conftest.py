"""The e2e tier: its marker, and the session's seed sandbox.

Every test under tests/e2e is marked ``e2e`` here, so ``-m "not e2e"`` runs
none of them (and starts no sandbox) and ``-m e2e`` runs exactly them.

``sandbox``: a running seed sandbox (started here, or reused if already up).
A sandbox this fixture starts is stopped at the end of the session unless
SANDBOX_KEEP=1; a sandbox that was already running is left running.
"""
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from sandbox_helpers import Sandbox  # noqa: E402


# tryfirst: the marker must be on the items before `-m` selects among them.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def sandbox():
    sb = Sandbox()
    started = sb.ensure_up()
    if not started:
        sb.reset()  # a reused sandbox may have been changed by earlier runs
    yield sb
    if started and os.environ.get("SANDBOX_KEEP") != "1":
        sb.down()
