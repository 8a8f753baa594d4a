"""commands/status.py against a fake cluster: --exit-code, the json summary, and where
warnings go."""

import json

import pytest

from kubectl_gpuisolate.errors import NotFound
from kubectl_gpuisolate.exits import EXIT_FINDINGS, EXIT_OK

from ..evict_fakes import FakeCluster
from ..factories import GPU_A, GPU_B, GPU_TAINT, GPU_TAINT_PRESENT, GPU_TOLERATION, gpu_node, node, owner, pod
from .helpers import run_command, table_rows

DS = owner("DaemonSet", "cilium")
# "tol" tolerates the GPU taint and uses no GPU: it stays, an isolation leak (counted by --strict).
STAYING = [pod("cilium", "kube-system", owner_ref=DS), pod("tol", tolerations=[GPU_TOLERATION])]
CLEAN = [pod("cilium", "kube-system", owner_ref=DS),
         pod("llm", tolerations=[GPU_TOLERATION], requests={"nvidia.com/gpu": "1"})]
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


@pytest.mark.parametrize("taints, pods, code", [
    ([GPU_TAINT], STAYING, EXIT_FINDINGS),        # the leak
    ([GPU_TAINT], CLEAN, EXIT_OK),
    ([GPU_TAINT], [pod("any", tolerations=[{"operator": "Exists"}])], EXIT_FINDINGS),
    (None, CLEAN, EXIT_FINDINGS),                 # --strict keeps what --exit-code counts
    ([GPU_TAINT], CLEAN + [MOVING], EXIT_FINDINGS),
], ids=["leak", "clean", "tolerates-everything", "untainted", "misplaced"])
def test_strict_counts_isolation_leaks_too(taints, pods, code):
    fake = FakeCluster([gpu_node(GPU_A, taints=taints)], pods)
    assert run_command(fake, "status", "--strict")[0] == code
    assert run_command(fake, "status", "--strict", "--exit-code")[0] == code


def test_a_leak_is_listed_counted_and_warned_with_the_toleration_to_remove():
    fake = FakeCluster([gpu_node(GPU_A, taints=[GPU_TAINT])], STAYING)
    _, out, err = run_command(fake, "status")
    assert "2 stay (1 daemonset, 1 tolerates-without-gpu); 1 isolation leak\n" in out
    assert {row[1]: row[3] for row in table_rows(out)} == {"tol": "tolerates-without-gpu"}
    assert ("Warning: isolation leak: pod default/tol tolerates nvidia.com/gpu=true:NoSchedule and "
            "uses no GPU; remove the toleration nvidia.com/gpu:NoSchedule (Exists) from "
            "ReplicaSet/web-5d4f8") in err
    [doc] = json.loads(run_command(fake, "status", "-o", "json")[1])["nodes"]
    assert doc["summary"]["leaks"] == 1


def test_exit_code_looks_at_every_node():
    fake = FakeCluster([gpu_node(GPU_A, taints=[GPU_TAINT]), gpu_node(GPU_B)], STAYING)
    assert run_command(fake, "status", "--exit-code")[0] == EXIT_FINDINGS
    assert run_command(fake, "status", "--exit-code", GPU_A)[0] == EXIT_OK


def test_json_summary_counts_move_and_blocked_as_would_move():
    fake = FakeCluster([gpu_node(GPU_A, taints=[GPU_TAINT])],
                       STAYING + [MOVING, BLOCKED, TERMINATING])
    code, out, _ = run_command(fake, "status", "-o", "json")
    [doc] = json.loads(out)["nodes"]
    assert doc["summary"] == {"wouldMove": 2, "stay": 2, "nowhereToLand": 0, "terminating": 1,
                              "leaks": 1,
                              "stayReasons": {"daemonset": 1, "tolerates-without-gpu": 1}}
    assert {p["name"]: p["verdict"] for p in doc["pods"]} == {
        "bare": "blocked", "old": "wait", "tol": "stay", "web": "move", "cilium": "stay"}


def test_text_never_says_a_staying_pod_would_move():
    fake = FakeCluster([gpu_node(GPU_A, taints=[GPU_TAINT])], STAYING + [MOVING, TERMINATING])
    for argv in (["--all-pods"], ["-o", "wide"]):
        _, out, _ = run_command(fake, "status", *argv)
        assert {row[1]: row[2] for row in table_rows(out)} == {
            "cilium": "stays", "tol": "stays", "web": "would move", "old": "terminating"}
    _, out, _ = run_command(fake, "status")    # by default: only the pods that need attention
    assert {row[1]: row[2] for row in table_rows(out)} == {"web": "would move",
                                                            "tol": "stays"}   # a leak, warned


SELECTOR = "nvidia.com/gpu.present=true"


def test_warnings_go_to_stderr_and_into_the_document_not_into_the_table():
    nodes = [gpu_node(GPU_A, taints=[GPU_TAINT]), node("cpu-1", capacity={"nvidia.com/gpu": "1"})]
    gpu_job = pod("gpu-job", requests={"nvidia.com/gpu": "1"})
    unlabelled = "Warning: node(s) with GPU capacity are not selected by nvidia.com/gpu.present=true: cpu-1"
    untolerated = ("GPU pod default/gpu-job uses nvidia.com/gpu but does not tolerate "
                   "nvidia.com/gpu=true:NoSchedule; after a restart it could not be scheduled on "
                   "this node")
    code, out, err = run_command(FakeCluster(nodes, [gpu_job]), "status", "-l", SELECTOR)
    assert err.splitlines() == [unlabelled, f"Warning: {untolerated}"]
    assert "Warning" not in out and "cpu-1" not in out
    code, out, err = run_command(FakeCluster(nodes, [gpu_job]), "status", "-l", SELECTOR, "-o", "json")
    assert json.loads(out)["warnings"] == [untolerated]
    assert err.splitlines() == [unlabelled, f"Warning: {untolerated}"]


def test_named_nodes_that_do_not_exist():
    fake = FakeCluster([gpu_node(GPU_A)], [])
    with pytest.raises(NotFound) as caught:
        run_command(fake, "status", "gpu-9", GPU_A, "gpu-8")
    assert str(caught.value).startswith("node(s) not found: gpu-9, gpu-8;")


PLATFORM_NODES = [
    node("gke-t4", labels={"cloud.google.com/gke-accelerator": "nvidia-tesla-t4"},
         taints=[GPU_TAINT_PRESENT]),
    node("aks-gpu", labels={"kubernetes.azure.com/accelerator": "nvidia"},
         taints=[{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]),
    node("karpenter-g5", labels={"karpenter.k8s.aws/instance-gpu-count": "1"}),
    node("mng-p4", capacity={"cpu": "96", "nvidia.com/gpu": "8"}),
    node("cpu-1"),
]


def test_platform_gpu_nodes_are_found_with_no_flags_each_with_its_signal():
    code, out, err = run_command(FakeCluster(PLATFORM_NODES, []), "status", "-o", "json")
    signals = {n["name"]: n["signal"] for n in json.loads(out)["nodes"]}
    assert {name: s["code"] for name, s in signals.items()} == {
        "gke-t4": "gke-accelerator-label", "aks-gpu": "aks-accelerator-label",
        "karpenter-g5": "karpenter-gpu-count", "mng-p4": "accelerator-capacity"}
    assert signals["aks-gpu"]["message"] == "labelled kubernetes.azure.com/accelerator=nvidia (AKS)"
    assert err == ""


def test_the_text_header_names_the_signal_and_wide_explains_it():
    _, out, _ = run_command(FakeCluster(PLATFORM_NODES, []), "status")
    assert "node/gke-t4: 0 GPU, GPU taint nvidia.com/gpu=present:NoSchedule; signal gke-accelerator-label; " \
           "0 pods" in out
    _, wide, _ = run_command(FakeCluster(PLATFORM_NODES, []), "status", "-o", "wide")
    assert "; signal karpenter-gpu-count: labelled karpenter.k8s.aws/instance-gpu-count=1 (Karpenter); " \
           "0 pods" in wide
    # The node view is kubectl's, over every node; only GPU nodes get a section.
    assert out.splitlines()[0].split() == ["NAME", "GPU_PRESENT", "TAINTS"]
    assert any(line.split()[0] == "cpu-1" for line in out.splitlines()[1:])
    assert "node/cpu-1:" not in out and "node/cpu-1:" not in wide


def test_no_gpu_node_by_the_rules_is_exit_6_on_one_line():
    with pytest.raises(NotFound) as caught:
        run_command(FakeCluster([node("cpu-1")], []), "status")
    assert caught.value.exit_code == 6
    assert str(caught.value) == ("no GPU nodes found: no node has a GPU signal (docs/design.md); label "
                                 "them or pass -l/--selector or node names")


def test_a_selected_node_without_a_signal_says_none():
    _, out, _ = run_command(FakeCluster([node("cpu-1")], []), "status", "cpu-1", "-o", "json")
    assert json.loads(out)["nodes"][0]["signal"] == {
        "code": "none", "message": "no GPU signal; selected by -l/--selector or by name"}


def test_the_node_view_covers_every_node_or_the_selection_as_kubectl_would():
    nodes = [gpu_node(GPU_A, taints=[GPU_TAINT]), node("cpu-1", labels={"pool": "cpu"}),
             node("cpu-2", labels={"pool": "cpu"}, taints=[GPU_TAINT])]
    fake = FakeCluster(nodes, [], workers=())

    def first_table(*argv):
        code, out, err = run_command(fake, "status", *argv)
        lines = out.split("\n\n")[0].splitlines()
        return [line.split()[0] for line in lines[1:]], err

    assert first_table()[0] == [GPU_A, "cpu-1", "cpu-2"]
    assert first_table(GPU_A)[0] == [GPU_A]
    assert first_table("-l", "pool=cpu")[0] == ["cpu-1", "cpu-2"]
    _, err = first_table()
    assert ("Warning: node/cpu-2 has no GPU signal but carries the GPU taint "
            "nvidia.com/gpu=true:NoSchedule; remove it with 'kubectl gpuisolate untaint cpu-2'") in err
    doc = json.loads(run_command(fake, "status", "-o", "json")[1])
    assert [n["name"] for n in doc["nodes"]] == [GPU_A]
    assert any("node/cpu-2 has no GPU signal" in w for w in doc["warnings"])


def test_a_node_with_nothing_to_attend_to_is_one_line():
    fake = FakeCluster([gpu_node(GPU_A, taints=[GPU_TAINT])], CLEAN)
    _, out, _ = run_command(fake, "status")
    sections = out.split("\n\n", 1)[1]
    assert sections.strip().splitlines() == [
        f"node/{GPU_A}: 2 GPU, GPU taint nvidia.com/gpu=true:NoSchedule; signal gpu-operator-label; "
        "2 pods: 0 would move, 2 stay (1 daemonset, 1 gpu-request)",
        "", "guard: absent ('kubectl gpuisolate guard' keeps new leaks off the GPU nodes)"]
