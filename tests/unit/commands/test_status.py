"""commands/status.py against a fake cluster: --exit-code, the json summary, and where
warnings go."""

import json

import pytest

from kubectl_gpuisolate.errors import EXIT_FINDINGS, EXIT_OK, NotFound

from ..evict_fakes import FakeCluster
from ..factories import (GPU_A, GPU_B, GPU_TAINT, GPU_TAINT_PRESENT, GPU_TOLERATION, gpu_node,
                         node, owner, pod)
from .helpers import run_command, table_rows

DS = owner("DaemonSet", "cilium")
STAYING = [pod("cilium", "kube-system", owner_ref=DS), pod("tol", tolerations=[GPU_TOLERATION])]
MOVING = pod("web")
BLOCKED = pod("bare", owner_ref=None)
TERMINATING = pod("old", deleting=True)


@pytest.mark.parametrize("taints, pods, code", [
    ([GPU_TAINT], STAYING, EXIT_OK),
    ([GPU_TAINT_PRESENT], STAYING, EXIT_OK),
    ([GPU_TAINT], STAYING + [TERMINATING], EXIT_OK),
    (None, STAYING, EXIT_FINDINGS),              # untainted, although nothing is misplaced
    (None, [], EXIT_FINDINGS),
    ([GPU_TAINT], STAYING + [MOVING], EXIT_FINDINGS),
    ([GPU_TAINT], STAYING + [BLOCKED], EXIT_FINDINGS),
], ids=["tainted-all-stay", "other-value-all-stay", "tainted-terminating", "untainted-all-stay",
        "untainted-empty", "misplaced", "blocked"])
def test_exit_code_flags_misplaced_pods_and_untainted_gpu_nodes(taints, pods, code):
    fake = FakeCluster([gpu_node(GPU_A, taints=taints)], pods)
    assert run_command(fake, "status", "--exit-code")[0] == code
    assert run_command(fake, "status")[0] == EXIT_OK          # only with --exit-code


def test_exit_code_looks_at_every_node():
    fake = FakeCluster([gpu_node(GPU_A, taints=[GPU_TAINT]), gpu_node(GPU_B)], STAYING)
    assert run_command(fake, "status", "--exit-code")[0] == EXIT_FINDINGS
    assert run_command(fake, "status", "--exit-code", GPU_A)[0] == EXIT_OK


def test_json_summary_counts_move_and_blocked_as_would_move():
    fake = FakeCluster([gpu_node(GPU_A, taints=[GPU_TAINT])],
                       STAYING + [MOVING, BLOCKED, TERMINATING])
    code, out, _ = run_command(fake, "status", "-o", "json")
    [doc] = json.loads(out)["nodes"]
    assert doc["summary"] == {"wouldMove": 2, "stay": 2, "terminating": 1,
                              "stayReasons": {"daemonset": 1, "tolerates": 1}}
    assert {p["name"]: p["verdict"] for p in doc["pods"]} == {
        "bare": "blocked", "old": "wait", "tol": "stay", "web": "move", "cilium": "stay"}


def test_text_never_says_a_staying_pod_would_move():
    fake = FakeCluster([gpu_node(GPU_A, taints=[GPU_TAINT])], STAYING + [MOVING, TERMINATING])
    _, out, _ = run_command(fake, "status")
    assert {row[1]: row[2] for row in table_rows(out)} == {
        "cilium": "stays", "tol": "stays", "web": "would move", "old": "terminating"}


def test_warnings_go_to_stderr_and_into_the_document_not_into_the_table():
    nodes = [gpu_node(GPU_A, taints=[GPU_TAINT]), node("cpu-1", capacity={"nvidia.com/gpu": "1"})]
    gpu_job = pod("gpu-job", requests={"nvidia.com/gpu": "1"})
    unlabelled = ("Warning: node(s) with GPU capacity but without nvidia.com/gpu.present=true "
                  "are not selected: cpu-1")
    untolerated = ("GPU pod default/gpu-job uses nvidia.com/gpu but does not tolerate "
                   "nvidia.com/gpu=true:NoSchedule; after a restart it could not be scheduled on "
                   "this node")
    code, out, err = run_command(FakeCluster(nodes, [gpu_job]), "status")
    assert err.splitlines() == [unlabelled, f"Warning: {untolerated}"]
    assert "Warning" not in out and "cpu-1" not in out
    code, out, err = run_command(FakeCluster(nodes, [gpu_job]), "status", "-o", "json")
    assert json.loads(out)["warnings"] == [untolerated]
    assert err.splitlines() == [unlabelled, f"Warning: {untolerated}"]


def test_named_nodes_that_do_not_exist():
    fake = FakeCluster([gpu_node(GPU_A)], [])
    with pytest.raises(NotFound) as caught:
        run_command(fake, "status", "gpu-9", GPU_A, "gpu-8")
    assert str(caught.value).startswith("node(s) not found: gpu-9, gpu-8;")
