"""NoExecute GPU taints on the seed sandbox, with the controller-manager's real taint-eviction
controller: it deletes what a NoExecute taint does not tolerate (checked first, with plain
kubectl), so `taint` refuses such a taint (exit 9, nothing written), `evacuate --taint-first` fences
with NoSchedule, evicts through the Eviction API and deletes no PDB-guarded, GPU or DaemonSet
pod, and --allow-pod-deletion writes it."""

import sys
import threading
from pathlib import Path

import pytest
from sandbox_helpers import GPU_A, GPU_B, GPU_NODES, owner_kind, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from faults.cluster import Admin, Watch  # noqa: E402
from faults.monitor import PdbMonitor  # noqa: E402

pytestmark = pytest.mark.e2e

NOEXEC = "nvidia.com/gpu=true:NoExecute"
FENCE = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
TEST_NS = "noexec-e2e"


def gpu_taints(sandbox, name):
    node = sandbox.get_json("node", name)
    return [t for t in node["spec"].get("taints") or () if t["key"] == "nvidia.com/gpu"]


def versions(sandbox):
    return {n: sandbox.get_json("node", n)["metadata"]["resourceVersion"] for n in GPU_NODES}


def uids(sandbox):
    return {p["metadata"]["uid"] for p in sandbox.pods("-A")}


def requests_gpu(pod):
    return any(k.startswith("nvidia.com/") for c in pod["spec"].get("containers") or ()
               for k in ((c.get("resources") or {}).get("requests") or {}))


def protected(sandbox):
    """The pods on the GPU nodes that must never be deleted: GPU and DaemonSet pods, and those a
    PDB allowing no disruption guards (within its budget a PDB-guarded pod may be evicted; the
    PdbMonitor checks that budget)."""
    guarded = set()
    for pdb in sandbox.get_json("pdb", "-A")["items"]:
        if (pdb.get("status") or {}).get("disruptionsAllowed", 0) > 0:
            continue
        labels = (pdb["spec"].get("selector") or {}).get("matchLabels") or {}
        for pod in sandbox.pods("-n", pdb["metadata"]["namespace"]):
            if labels and all((pod["metadata"].get("labels") or {}).get(k) == v
                              for k, v in labels.items()):
                guarded.add(pod["metadata"]["uid"])
    found = {}
    for node in GPU_NODES:
        for pod in sandbox.pods_on(node):
            uid = pod["metadata"]["uid"]
            if uid in guarded or requests_gpu(pod) or owner_kind(pod) == "DaemonSet":
                found[uid] = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
    return found


class DeletionWatch:
    """Every protected pod that got a deletionTimestamp or was deleted, from a pod watch."""

    def __init__(self, sandbox, watched):
        self.watched, self.hits, self.events = watched, [], 0
        self.watch = Watch(Admin(sandbox.dir), "/api/v1/pods", self.on_event)

    def on_event(self, kind, pod):
        self.events += 1
        uid = pod["metadata"]["uid"]
        if uid in self.watched and (kind == "DELETED" or pod["metadata"].get("deletionTimestamp")):
            self.hits.append((kind, self.watched[uid]))

    def __enter__(self):
        self.watch.start()
        return self

    def __exit__(self, *exc):
        self.watch.stop()


def test_the_sandbox_runs_the_taint_eviction_controller(clean):
    """A plain `kubectl taint` NoExecute deletes a pod that does not tolerate it."""
    clean.kubectl("create", "namespace", TEST_NS)
    clean.kubectl("run", "victim", "-n", TEST_NS, "--image=busybox", "--restart=Never",
                  f"--overrides={{\"apiVersion\":\"v1\",\"spec\":{{\"nodeName\":\"{GPU_A}\"}}}}")
    wait_until("victim running", lambda: clean.get_json("pod", "-n", TEST_NS, "victim")
               ["status"].get("phase") == "Running")
    clean.kubectl("taint", "node", GPU_A, "e2e-noexec=yes:NoExecute")
    try:
        wait_until("victim deleted by the taint-eviction controller",
                   lambda: clean.kubectl("get", "pod", "-n", TEST_NS, "victim",
                                         check=False).returncode != 0, timeout=60)
    finally:
        clean.kubectl("taint", "node", GPU_A, "e2e-noexec=yes:NoExecute-", check=False)


def test_taint_noexecute_refuses_and_changes_nothing(gpuisolate, clean):
    before_versions, before_uids = versions(clean), uids(clean)
    result = gpuisolate("taint", "--gpu-taint", NOEXEC)
    assert result.returncode == 9, result.stderr
    assert result.stdout == ""
    error = result.stderr.splitlines()[-1]
    assert error.startswith(f"error: {NOEXEC} would delete ") and "--allow-pod-deletion" in error
    assert f"node/{GPU_B}: {NOEXEC} would delete " in result.stderr
    assert "nai-system/nai-db-0 (PDB-guarded (nai-db)" in result.stderr
    assert "GPU consumer" in result.stderr and "DaemonSet pod" in result.stderr
    assert versions(clean) == before_versions
    assert uids(clean) == before_uids


def test_evacuate_fences_first_and_deletes_no_protected_pod(gpuisolate, clean):
    watched = protected(clean)
    assert "nai-system/nai-db-0" in watched.values()
    assert any(name.startswith("nai-admin/llama32-iep-predictor") for name in watched.values())
    monitor = PdbMonitor(Admin(clean.dir)).start()
    samples, stop = [], threading.Event()

    def sample():            # the protected pods' UIDs, while the run goes on and after
        while not stop.is_set():
            samples.append(set(watched) - uids(clean))
            stop.wait(0.5)
    try:
        monitor.arm()
        with DeletionWatch(clean, watched) as deletions:
            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            result = gpuisolate("evacuate", "--taint-first", "--gpu-taint", NOEXEC,
                                "--delete-emptydir-data", "--force", "--timeout", "30s")
            stop.wait(15)    # after: a NoExecute taint would have deleted them by now
            stop.set()
            sampler.join()
        violations, checks = monitor.disarm()
    finally:
        monitor.stop()
    # nai-db-0 (its PDB never allows an eviction) stays pending: exit 10, fence kept.
    assert result.returncode == 10, result.stdout + result.stderr
    assert deletions.events > 0 and deletions.hits == []
    assert len(samples) >= 10 and all(missing == set() for missing in samples)
    assert checks > 0 and violations == []
    for node in GPU_NODES:
        assert gpu_taints(clean, node) == [FENCE], node
    assert "keeps the fence nvidia.com/gpu=true:NoSchedule" in result.stdout
    assert set(watched) <= uids(clean)


def test_allow_pod_deletion_writes_the_noexecute_taint(gpuisolate, clean):
    result = gpuisolate("taint", "--gpu-taint", NOEXEC, "--allow-pod-deletion")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"node/{GPU_A} tainted", f"node/{GPU_B} tainted"]
    assert f"node/{GPU_B}: {NOEXEC} will delete " in result.stderr
    for node in GPU_NODES:
        assert gpu_taints(clean, node) == [{"key": "nvidia.com/gpu", "value": "true",
                                            "effect": "NoExecute"}]
