"""Other actors on the same nodes at the same time: a real `kubectl drain` of the node evacuate
is working on, a controller that takes the GPU taint off each time it appears (as Cluster API's
taint propagation or AKS's node-pool taints do), and a second evacuate of the same node.

The API server's audit log says who evicted what; the PDB monitor watches every budget."""

import json
import sys
import threading
import time
from pathlib import Path

import pytest
from race_helpers import Once, Watched, ours, plugin_run, quorum
from sandbox_helpers import GPU_A, REPO, wait_until

sys.path.insert(0, str(Path(REPO) / "tests"))
from faults import audit  # noqa: E402
from faults.checks import Checker  # noqa: E402
from faults.cluster import Admin, ApiError, classify, ref  # noqa: E402
from faults.control_plane import ControlPlane  # noqa: E402
from faults.soak import Spec  # noqa: E402

pytestmark = pytest.mark.control_plane
TIMEOUT = 150


def summary_of(stdout):
    doc = json.loads(stdout)
    assert [n["name"] for n in doc["nodes"]] == [GPU_A], doc
    return doc["nodes"][0]


def movable_before(watched):
    """The pods on GPU A an evacuation must move, by the soak's independent oracle."""
    claims = watched.before.get("localClaims")
    return {ref(p) for p in watched.before["pods"].values()
            if p["spec"].get("nodeName") == GPU_A and classify(p, "true", claims) in ("move", "terminating")}


def still_there(watched, refs):
    """Those of ``refs`` whose pod from before (by UID: a StatefulSet's replacement has the same
    name) is still there and not terminating."""
    alive = {uid for uid, p in watched.admin.pods().items() if not p["metadata"].get("deletionTimestamp")}
    return {ref(p) for uid, p in watched.before["pods"].items() if ref(p) in refs and uid in alive}


def test_kubectl_drain_of_the_same_node_while_evacuate_runs(gpuisolate, clean, namespace):
    quorum(clean, namespace)
    assert gpuisolate("taint").returncode == 0
    watched = Watched(clean, ControlPlane(clean.dir))
    movable = movable_before(watched)
    drains = []

    def drain():
        drains.append(clean.kubectl("drain", GPU_A, "--ignore-daemonsets", "--delete-emptydir-data",
                                    "--force", "--timeout=140s", check=False, timeout=180))
    started = Once(lambda stream, line: "evicting pod" in line, drain)
    run = plugin_run(gpuisolate, "evacuate", GPU_A, "--delete-emptydir-data", "-o", "json",
                     "--max-parallel", "1", "--timeout", f"{TIMEOUT}s", on_line=started)
    rc, out, err, _ = run.wait(TIMEOUT + 60)
    started.join()
    violations, _, evictions = watched.finish()
    assert drains[0].returncode == 0, drains[0].stderr
    assert rc == 0, err[-3000:]
    assert violations == []
    node = summary_of(out)
    moved = set(node.get("moved") or ())
    assert moved == movable and not node.get("failed") and not node.get("pending"), node
    assert still_there(watched, moved) == set()
    # Drain took some of them first: evacuate counts those as moved (gone), not as failures.
    by_drain = {f"{e.namespace}/{e.name}" for e in evictions
                if e.user_agent.startswith("kubectl/") and e.code in (200, 201)}
    by_plugin = {f"{e.namespace}/{e.name}" for e in ours(evictions) if e.code in (200, 201)}
    assert movable & by_drain - by_plugin, (sorted(by_drain), sorted(by_plugin))
    assert audit.evicted_twice(ours(evictions)) == []
    # The cordon is drain's: evacuate neither adds nor removes one.
    assert clean.get_json("node", GPU_A)["spec"].get("unschedulable") is True


class TaintRemover:
    """A controller that owns the node's taint list (its own pool taint) and takes the GPU taint
    off whenever it appears, with a field manager of its own."""

    MANAGER = "cluster-api-taint-propagation"
    POOL_TAINT = {"key": "example.com/pool", "value": "gpu", "effect": "PreferNoSchedule"}

    def __init__(self, kube, node):
        self.kube, self.node = kube, node
        self.removed = 0
        self.errors = []
        self._stop = threading.Event()
        self._write([self.POOL_TAINT], self.kube.get("nodes", node))
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _write(self, taints, current):
        self.kube.request("PATCH", f"/api/v1/nodes/{self.node}?fieldManager={self.MANAGER}",
                          {"metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                           "spec": {"taints": taints}}, content_type="application/merge-patch+json")

    def _run(self):
        while not self._stop.is_set():
            try:
                node = self.kube.get("nodes", self.node)
                taints = node["spec"].get("taints") or []
                kept = [t for t in taints if t["key"] != "nvidia.com/gpu"]
                if kept != taints:
                    self._write(kept, node)
                    self.removed += 1
            except ApiError as exc:
                if exc.status != 409:
                    self.errors.append(str(exc))
            self._stop.wait(0.05)

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=10)


def test_a_controller_that_removes_the_taint_stops_taint_after_three_writes(gpuisolate, clean):
    remover = TaintRemover(Admin(clean.dir).kube, GPU_A)
    try:
        started = time.monotonic()
        result = gpuisolate("taint", GPU_A, timeout=60)
        seconds = time.monotonic() - started
        time.sleep(1)
    finally:
        remover.stop()
    assert result.returncode == 7, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith(
        f"error: node {GPU_A}: nvidia.com/gpu=true:NoSchedule was removed again after each of 3 "
        f"writes: field manager '{TaintRemover.MANAGER}' (the node's managedFields) removes it; "
        "the node belongs to Cluster API MachineDeployment nkpnai-gpupool-1-z9mz6: set the taint in "
        "the bootstrap template of MachineDeployment"), lines[-1]
    assert sum(line.startswith("error:") for line in lines) == 1
    assert sum(line.startswith("Warning: ") and "writing it again" in line for line in lines) == 2
    # Bounded: three writes, three removals, and it stopped.
    assert remover.removed == 3 and remover.errors == []
    assert seconds < 20
    # Without the controller the same command keeps its taint.
    assert gpuisolate("taint", GPU_A).returncode == 0
    taints = clean.get_json("node", GPU_A)["spec"]["taints"]
    assert sorted(t["key"] for t in taints) == ["example.com/pool", "nvidia.com/gpu"]


def test_two_evacuates_of_the_same_node_at_once(gpuisolate, clean, namespace):
    quorum(clean, namespace)
    assert gpuisolate("taint").returncode == 0
    watched = Watched(clean, ControlPlane(clean.dir))
    movable = movable_before(watched)
    args = ("evacuate", GPU_A, "--delete-emptydir-data", "-o", "json", "--max-parallel", "2",
            "--timeout", f"{TIMEOUT}s")
    runs = [plugin_run(gpuisolate, *args) for _ in range(2)]
    results = [run.wait(TIMEOUT + 60) for run in runs]
    violations, checks, evictions = watched.finish()
    spec = Spec(0, "evacuate", [GPU_A], list(args), {GPU_A: "true"}, targets=(GPU_A,))
    after = watched.snapshot()
    moved_by = []
    for rc, out, err, _ in results:
        assert rc == 0, err[-3000:]
        checker = Checker(spec, watched.before, after, rc, out, err)
        checker.common(violations, checks, None)
        assert checker.failures == [], checker.failures
        node = summary_of(out)
        moved = set(node.get("moved") or ())
        # Each summary is true: what it says moved is gone and was to move; nothing failed.
        assert moved <= movable and still_there(watched, moved) == set(), node
        assert not node.get("failed") and not node.get("pending"), node
        moved_by.append(moved)
    assert moved_by[0] | moved_by[1] == movable
    assert audit.evicted_twice(evictions) == []
    wait_until("the quorum back at 6 running", lambda: sum(
        p["status"].get("phase") == "Running" for p in clean.pods("-n", namespace, "-l", "app=quorum")) == 6)

