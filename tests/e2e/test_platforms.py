"""GPU nodes and GPU pods as real platforms shape them (platforms.md §1, §3, §5), against the seed
sandbox: kwok nodes shaped as GKE, AKS, Karpenter, EKS (managed node group, Auto Mode), OpenShift/NFD,
NKP/Cluster API, an Inferentia node and two nodes in someone else's maintenance
(tests/sandbox/sandboxctl/platforms.py, the `platforms` scenario's shapes) are added for this module and
removed after it.  Judged by cluster state: UIDs and taints, not only output."""
import json
import os
import sys

import pytest
from plugin import REPO
from sandbox_helpers import wait_until

sys.path.insert(0, os.path.join(REPO, "tests", "sandbox"))
from sandboxctl import platforms as scenario  # noqa: E402  (the scenario's shapes)

pytestmark = pytest.mark.e2e

NS = scenario.NS
GPU_TAINT, DISRUPTED, SKU = scenario.GPU_TAINT, scenario.DISRUPTED, scenario.SKU
NODES, EXPECTED_SIGNALS, CONSUMERS = scenario.NODES, scenario.EXPECTED_SIGNALS, scenario.CONSUMERS


def apply(sandbox, *objects):
    sandbox.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                           "items": list(objects)}))


def running(sandbox, name):
    return [p for p in sandbox.pods("-n", NS, "-l", f"app={name}")
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


def taints(sandbox, name):
    return sandbox.get_json("node", name)["spec"].get("taints") or []


@pytest.fixture(scope="module")
def platforms(sandbox):
    sandbox.reset()
    apply(sandbox, scenario.namespace())
    apply(sandbox, *NODES.values())
    wait_until("the platform nodes Ready", lambda: all(
        any(c["type"] == "Ready" and c["status"] == "True"
            for c in sandbox.get_json("node", n)["status"].get("conditions") or []) for n in NODES))
    apply(sandbox, *scenario.workloads()[1:])
    for name in list(CONSUMERS) + scenario.WORKLOADS + scenario.BUSY:
        wait_until(f"pod {name} Running", lambda name=name: len(running(sandbox, name)) == 1)
    yield sandbox
    sandbox.kubectl("delete", "namespace", NS, "--wait=true", "--timeout=120s", check=False)
    sandbox.kubectl("delete", "node", *NODES, "--wait=true", "--timeout=60s", check=False)
    sandbox.reset()


def test_platform_gpu_nodes_are_found_with_no_flags_with_their_signal(platforms, gpuisolate):
    result = gpuisolate("status", "-o", "json")
    assert result.returncode == 0, result.stderr
    found = {n["name"]: n["signal"]["code"] for n in json.loads(result.stdout)["nodes"]}
    for name, code in EXPECTED_SIGNALS.items():
        assert found.get(name) == code, (name, found)
    assert {n for n in found if not n.startswith("plat-")}, found    # the seed's GPU nodes too
    text = gpuisolate("status", "plat-gke", "plat-aks", "plat-karpenter").stdout
    for name in ("plat-gke", "plat-aks", "plat-karpenter"):
        assert f"signal {EXPECTED_SIGNALS[name]};" in text


def test_every_consumer_form_stays_with_its_reason_and_uid(platforms, gpuisolate):
    doc = json.loads(gpuisolate("status", "plat-mng", "plat-inf", "-o", "json").stdout)
    reasons = {p["name"]: p["reason"] for n in doc["nodes"] for p in n["pods"]}
    for name, (_, reason) in CONSUMERS.items():
        assert reasons[name] == reason, (name, reasons)
    before = {name: running(platforms, name)[0]["metadata"]["uid"] for name in list(CONSUMERS) + ["agent"]}
    moving = {running(platforms, name)[0]["metadata"]["uid"] for name in ("web-mng", "web-inf")}
    result = gpuisolate("evacuate", "plat-mng", "plat-inf", "--taint-first", "--timeout", "90s")
    assert result.returncode == 0, result.stdout + result.stderr
    after = {name: [p["metadata"]["uid"] for p in running(platforms, name)] for name in before}
    assert after == {name: [uid] for name, uid in before.items()}
    left = {p["metadata"]["uid"] for p in platforms.pods("-n", NS)}
    assert not moving & left
    for name in ("plat-mng", "plat-inf"):
        assert GPU_TAINT in taints(platforms, name)


def test_provider_taints_are_untouched_by_taint_and_untaint(platforms, gpuisolate):
    assert gpuisolate("taint", "plat-aks", "plat-busy").returncode == 0
    assert SKU in taints(platforms, "plat-aks") and GPU_TAINT in taints(platforms, "plat-aks")
    assert DISRUPTED in taints(platforms, "plat-busy")
    assert gpuisolate("untaint", "plat-aks").returncode == 0
    assert taints(platforms, "plat-aks") == [SKU]
    present = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    gke = gpuisolate("taint", "plat-gke", "--gpu-taint", "nvidia.com/gpu=present:NoSchedule")
    assert gke.returncode == 0 and taints(platforms, "plat-gke") == [present]   # GKE's own: already there
    other = gpuisolate("taint", "plat-gke")    # another value for the same key and effect: refused
    assert other.returncode == 7 and taints(platforms, "plat-gke") == [present]


@pytest.mark.parametrize("argv", [["taint", "--gpu-taint", "karpenter.sh/disrupted:NoSchedule"],
                                  ["untaint", "--gpu-taint", "node.kubernetes.io/unschedulable"],
                                  ["taint", "--gpu-taint", "nvidia.com/gpu=true:Sometimes"]],
                         ids=["provider-key", "untaint-provider-key", "unknown-effect"])
def test_bad_gpu_taints_are_one_line_exit_2_and_nothing_written(platforms, gpuisolate, argv):
    before = {name: taints(platforms, name) for name in NODES}
    result = gpuisolate(*argv, "plat-busy", "plat-aks")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error: invalid ") and result.stderr.count("\n") == 1
    assert {name: taints(platforms, name) for name in NODES} == before


def test_nodes_in_someone_elses_maintenance_are_refused(platforms, gpuisolate):
    before = {name: running(platforms, name)[0]["metadata"]["uid"] for name in ("web-busy", "web-upgrade")}
    result = gpuisolate("evacuate", "plat-busy", "plat-upgrade", "--force", "--timeout", "30s")
    assert result.returncode == 9, result.stdout + result.stderr
    assert "node/plat-busy refused: Karpenter is disrupting it" in result.stderr
    assert "node/plat-upgrade refused: the GPU Operator is upgrading its driver" in result.stderr
    assert {name: running(platforms, name)[0]["metadata"]["uid"] for name in before} == before
    assert DISRUPTED in taints(platforms, "plat-busy")
