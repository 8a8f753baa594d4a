"""output/status.py over the planner's real output: every verdict and reason as the table
says it and as the document says it, the node headers, the wide columns, the PDB blockers."""

import pytest

from kubectl_gpuisolate.core import landing, planner
from kubectl_gpuisolate.core.taints import Taint
from kubectl_gpuisolate.output.status import StatusResult, render_text, to_document

from ..commands.helpers import table_rows
from ..factories import (
    GPU_A,
    GPU_TAINT,
    GPU_TAINT_PRESENT,
    GPU_TOLERATION,
    INFERENCE_TOLERATIONS,
    gpu_node,
    owner,
    pdb,
    pod,
)

MANAGED = Taint("nvidia.com/gpu", "true", "NoSchedule")
MIRROR = {"kubernetes.io/config.mirror": "abc"}
EMPTY_DIR = [{"name": "cache", "emptyDir": {}}]

# (pod, action, the table's verdict, reason)
CASES = {
    "not-tolerated": (pod("web"), planner.MOVE, "would move", "not-tolerated"),
    "gated-emptydir": (pod("cache", volumes=EMPTY_DIR), planner.BLOCKED, "would move", "gated"),
    "gated-bare": (pod("bare", owner_ref=None), planner.BLOCKED, "would move", "gated"),
    "daemonset": (pod("ds", owner_ref=owner("DaemonSet", "cilium")), planner.STAY, "stays",
                  "daemonset"),
    "mirror": (pod("static", annotations=MIRROR, owner_ref=None), planner.STAY, "stays", "mirror"),
    "finished": (pod("job", owner_ref=owner("Job", "j"), phase="Succeeded"), planner.STAY,
                 "stays", "finished"),
    "gpu-request": (pod("llm", tolerations=INFERENCE_TOLERATIONS,
                        requests={"nvidia.com/gpu": "1"}), planner.STAY, "stays", "gpu-request"),
    "resource-claim": (pod("dra", tolerations=INFERENCE_TOLERATIONS, claims=["gpu"]), planner.STAY,
                       "stays", "resource-claim"),
    "tolerates-without-gpu": (pod("tol", tolerations=[GPU_TOLERATION]), planner.STAY, "stays",
                              "tolerates-without-gpu"),
    "tolerates-everything": (pod("all", tolerations=[{"operator": "Exists"}]), planner.STAY, "stays",
                             "tolerates-everything"),
    "terminating": (pod("old", deleting=True), planner.WAIT, "terminating", "terminating"),
}


def result(pods, *, taints=(GPU_TAINT,), pdbs=(), node=None):
    node = node or gpu_node(GPU_A, taints=list(taints) if taints else None)
    plan = planner.plan_node(node, pods, list(pdbs), planner.PlanOptions(MANAGED))
    return StatusResult([node], [plan], MANAGED)


@pytest.mark.parametrize("case", CASES)
def test_each_verdict_as_the_table_and_the_document_say_it(case):
    pod_, action, verdict, reason = CASES[case]
    status = result([pod_])
    assert [d.action for d in status.plans[0].decisions] == [action]   # the planner agrees
    [row] = table_rows(render_text(status))
    assert row[:4] == ["default", pod_["metadata"]["name"], verdict, reason]
    [doc] = to_document(status)["nodes"][0]["pods"]
    assert (doc["verdict"], doc["reason"]) == (action, reason)
    misplaced = action in (planner.MOVE, planner.BLOCKED)
    assert to_document(status)["nodes"][0]["summary"] == {
        "wouldMove": int(misplaced), "stay": int(action == planner.STAY), "nowhereToLand": 0,
        "terminating": int(action == planner.WAIT), "leaks": int(reason.startswith("tolerates")),
        "stayReasons": {reason: 1} if action == planner.STAY else {}}


def test_pods_with_nowhere_to_land_are_counted_apart_and_in_the_document():
    here = gpu_node(GPU_A, taints=[GPU_TAINT])
    cluster = landing.Cluster(nodes=(here,), run=frozenset({GPU_A}), gpu=frozenset({GPU_A}))
    plan = planner.plan_node(here, [pod("pinned"), pod("ds", owner_ref=owner("DaemonSet", "c"))], [],
                             planner.PlanOptions(MANAGED), cluster=cluster)
    status = StatusResult([here], [plan], MANAGED)
    [header] = [line for line in render_text(status).splitlines() if line.startswith("node/")]
    assert header.endswith("2 pods: 0 would move, 1 nowhere to land, 2 stay "
                           "(1 daemonset, 1 nowhere-to-land)")
    summary = to_document(status)["nodes"][0]["summary"]
    assert (summary["wouldMove"], summary["nowhereToLand"], summary["stay"]) == (0, 1, 2)
    [row] = [r for r in table_rows(render_text(status)) if r[1] == "pinned"]
    assert row[2:] == ["stays", "nowhere-to-land", "nowhere to land: every node is in this run"]


def test_the_node_header_counts_every_verdict_and_stay_reason():
    status = result([case[0] for case in CASES.values()])
    header = [line for line in render_text(status).splitlines() if line.startswith("node/")]
    assert header == [f"node/{GPU_A}: 2 GPU, GPU taint nvidia.com/gpu=true:NoSchedule; "
                      "signal gpu-operator-label; 11 pods: "
                      "3 would move, 7 stay (1 daemonset, 1 finished, 1 gpu-request, 1 mirror, "
                      "1 resource-claim, 1 tolerates-everything, 1 tolerates-without-gpu), "
                      "1 terminating; 2 isolation leaks"]
    summary = to_document(status)["nodes"][0]["summary"]
    assert summary == {"wouldMove": 3, "stay": 7, "nowhereToLand": 0, "terminating": 1, "leaks": 2,
                       "stayReasons": {"daemonset": 1, "finished": 1, "gpu-request": 1,
                                       "mirror": 1, "resource-claim": 1, "tolerates-everything": 1,
                                       "tolerates-without-gpu": 1}}
    assert list(summary["stayReasons"]) == sorted(summary["stayReasons"])


@pytest.mark.parametrize("taints, text", [
    ([GPU_TAINT], "GPU taint nvidia.com/gpu=true:NoSchedule;"),
    ([GPU_TAINT_PRESENT], "GPU taint nvidia.com/gpu=present:NoSchedule;"),
    ([{"key": "nvidia.com/gpu", "effect": "NoSchedule"}], "GPU taint nvidia.com/gpu:NoSchedule;"),
    (None, "GPU taint absent;"),
], ids=["true", "present", "no-value", "absent"])
def test_the_header_names_the_gpu_taint_on_the_node(taints, text):
    out = render_text(result([], taints=taints))
    assert f"node/{GPU_A}: 2 GPU, {text} signal gpu-operator-label; 0 pods: 0 would move, 0 stay\n" in out


def test_a_cordoned_node_says_so():
    node = gpu_node(GPU_A, taints=[GPU_TAINT])
    node["spec"]["unschedulable"] = True
    assert ", cordoned; signal gpu-operator-label; 0 pods" in render_text(result([], node=node))


def test_wide_adds_the_owner_and_the_pdbs():
    web = pod("web", labels={"app": "web"})
    status = result([web, pod("bare", owner_ref=None)],
                    pdbs=[pdb("web-pdb", selector={"matchLabels": {"app": "web"}})])
    rows = {row[1]: row for row in table_rows(render_text(status, wide=True))}
    assert rows["web"][:6] == ["default", "web", "would move", "ReplicaSet/web-5d4f8", "web-pdb",
                               "not-tolerated"]
    assert rows["bare"][:6] == ["default", "bare", "would move", "<none>", "<none>", "gated"]


def test_pdbs_that_would_block_a_move_are_listed_after_the_nodes():
    web = pod("web", labels={"app": "web"})
    blocking = pdb("web-pdb", selector={"matchLabels": {"app": "web"}}, min_available=1,
                   allowed=0, desired=1, healthy=1, expected=1)
    text = render_text(result([web], pdbs=[blocking]))
    assert text.split("\nPodDisruptionBudgets that would block a move:\n")[1].splitlines() == [
        "NAMESPACE    PDB      ALLOWED    HEALTHY    NEEDS    NOTE",
        "default      web-pdb  0          1          1        never allows an eviction: "
        "minAvailable 1 >= its 1 pod(s)"]
    assert to_document(result([web], pdbs=[blocking]))["pdbBlockers"][0]["name"] == "web-pdb"
