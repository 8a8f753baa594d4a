"""The e2e tier: its marker and its shared fixtures.

Every test under tests/e2e is marked ``e2e`` here, so ``-m "not e2e"`` runs
none of them (and starts no sandbox) and ``-m e2e`` runs exactly them.

Fixtures: ``sandbox``, a running seed sandbox for the session (started here, or
reused if already up; one this fixture starts is stopped at the end unless
SANDBOX_KEEP=1); ``seed`` and ``clean``, the seed state freshly reset for a
test that reads it or changes it; ``namespace``, a namespace of the test's own;
``plugin_bin`` and ``gpuisolate``, the plugin run through kubectl's plugin
discovery (plugin.py); ``rbac``, roles and bindings of one test.
"""
import json
import os
import sys
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from plugin import Plugin, write_launcher  # noqa: E402
from sandbox_helpers import Sandbox  # noqa: E402

# Under pytest-xdist (scripts/test runs the 1.33 pass on two workers, a file per worker at a
# time) each worker has a sandbox of its own, so that no test sees another's changes:
# .sandbox-gw0, .sandbox-gw1 (beside $SANDBOX_DIR when it is set).  Set in the environment, so
# that the scripts a test runs (scripts/soak, scripts/sandbox) use the same one.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["SANDBOX_DIR"] = (f"{os.environ.get('SANDBOX_DIR') or HERE.parents[1] / '.sandbox'}"
                                 f"-{os.environ['PYTEST_XDIST_WORKER']}")


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
    Sandbox.untouched = True
    yield sb
    if started and os.environ.get("SANDBOX_KEEP") != "1":
        sb.down()


@pytest.fixture(autouse=True)
def _seed_untouched(request):
    """Tracks whether the sandbox is still as the last reset left it: only tests that take
    ``seed`` (which only read) or ``clean`` (which resets after itself) keep it so, so any
    other test that ran since means the next ``seed`` resets.  A test that takes neither but
    may touch the sandbox thus never costs a reader a stale view."""
    if "seed" not in request.fixturenames and "clean" not in request.fixturenames:
        Sandbox.untouched = False
    yield


@pytest.fixture
def seed(sandbox):
    """The seed state for this test, which only reads it: reset unless only other readers ran
    since the last reset (a no-op reset still costs a process and ~70 requests)."""
    if not Sandbox.untouched:
        sandbox.reset()
        Sandbox.untouched = True
    return sandbox


@pytest.fixture
def clean(sandbox):
    """The seed state, reset before this test changes it (unless only readers and ``clean``
    tests ran since the last reset) and again afterwards."""
    if not Sandbox.untouched:
        sandbox.reset()
    Sandbox.untouched = False
    yield sandbox
    sandbox.reset()
    Sandbox.untouched = True


@pytest.fixture
def namespace(request, sandbox):
    """A uniquely named namespace for this test's own workloads, deleted (and waited for) after it.

    A reset deletes every namespace created after `up`, so when the test also uses ``seed``
    or ``clean`` their reset runs first (and ``clean``'s second reset after this teardown)."""
    for resetting in ("seed", "clean"):
        if resetting in request.fixturenames:
            request.getfixturevalue(resetting)
    name = f"e2e-{uuid.uuid4().hex[:12]}"
    sandbox.kubectl("create", "namespace", name)
    yield name
    # Waiting keeps this test's terminating pods out of the next test's view of the nodes.
    sandbox.kubectl("delete", "namespace", name, "--ignore-not-found", "--timeout=180s", timeout=240)


@pytest.fixture(scope="session")
def plugin_bin(tmp_path_factory):
    """A directory holding a ``kubectl-gpuisolate`` launcher for this checkout."""
    return write_launcher(tmp_path_factory.mktemp("plugin-bin"))


@pytest.fixture
def gpuisolate(plugin_bin, sandbox):
    """``gpuisolate(*args)``: ``kubectl gpuisolate ARGS`` against the sandbox."""
    return Plugin(plugin_bin, str(sandbox.kubeconfig))


@pytest.fixture
def rbac(sandbox):
    """``rbac(*objects)`` applies roles and bindings for one test; deleted afterwards."""
    created = []

    def add(*objects):
        sandbox.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                               "items": list(objects)}))
        created.extend(objects)
    yield add
    for obj in created:
        sandbox.kubectl("delete", obj["kind"].lower(), obj["metadata"]["name"], "--wait=false", check=False)
