"""What taint, untaint, status and evacuate say about the nodes' managers (commands/owners.py)
through the fake cluster: the note once per pool, the refusal of a taint a controller owns,
GKE Autopilot's "nothing to do", and manager/pool in status -o json."""

import json

import pytest

from kubectl_gpuisolate.errors import ConflictError
from kubectl_gpuisolate.exits import EXIT_CONFLICT, EXIT_OK

from ..evict_fakes import FakeCluster
from ..factories import GPU_A, GPU_B, GPU_TAINT, GPU_TAINT_PRESENT, gpu_node
from .helpers import buffers, run_command

MACHINE_SET = "nkpnai-gpupool-1-z9mz6-pl9k2"
POOL_NOTE = ("Warning: pool nkpnai-gpupool-1-z9mz6 (Cluster API MachineDeployment): a taint "
             "written here is lost when the machines are replaced; {action} the bootstrap "
             "template of MachineDeployment nkpnai-gpupool-1-z9mz6 (KubeadmConfigTemplate "
             "spec.template.spec.joinConfiguration.nodeRegistration.taints; NKP: the node pool's "
             "workerConfig.taints), or with Cluster API >= v1.12 and the MachineTaintPropagation "
             "gate, MachineDeployment nkpnai-gpupool-1-z9mz6 spec.template.spec.taints")
AUTOPILOT = {"cloud.google.com/compute-class": "Accelerator",
             "cloud.google.com/gke-accelerator": "nvidia-l4",
             "cloud.google.com/gke-nodepool": "nap-g2"}


def capi_node(name, taints=None, propagated=None):
    found = gpu_node(name, taints=taints)
    found["metadata"]["annotations"] = {
        "cluster.x-k8s.io/cluster-name": "nkpnai", "cluster.x-k8s.io/machine": name,
        "cluster.x-k8s.io/owner-kind": "MachineSet", "cluster.x-k8s.io/owner-name": MACHINE_SET}
    if propagated:
        found["metadata"]["annotations"]["cluster.x-k8s.io/taints-from-machine"] = propagated
    return found


def seed(a_taints=None, b_taints=None, propagated=None):
    return FakeCluster([capi_node(GPU_A, a_taints, propagated),
                        capi_node(GPU_B, b_taints, propagated)], [])


def warnings(err):
    return [line for line in err.splitlines() if line.startswith("Warning: pool ")]


@pytest.mark.parametrize("argv, action", [
    (["taint"], "persist it in"), (["untaint"], "remove it from"),
    (["status"], "persist the GPU taint in"), (["status", "-o", "json"], "persist the GPU taint in"),
])
def test_the_pool_note_comes_once_for_the_two_nodes_of_one_pool(argv, action):
    code, _, err = run_command(seed(b_taints=[GPU_TAINT]), *argv)
    assert code == EXIT_OK
    assert warnings(err) == [POOL_NOTE.format(action=action)]


def test_nodes_without_a_manager_get_no_note():
    fake = FakeCluster([gpu_node(GPU_A), gpu_node(GPU_B)], [])
    code, _, err = run_command(fake, "taint")
    assert code == EXIT_OK and warnings(err) == []


def test_status_json_carries_manager_and_pool_per_node():
    karpenter = gpu_node("k-1", labels={"karpenter.sh/nodepool": "gpu"})
    fake = FakeCluster([capi_node(GPU_A), karpenter, gpu_node(GPU_B)], [])
    _, out, _ = run_command(fake, "status", "-o", "json")
    found = [(n["name"], n["manager"], n["pool"]) for n in json.loads(out)["nodes"]]
    assert found == [(GPU_A, "Cluster API MachineDeployment", "nkpnai-gpupool-1-z9mz6"),
                     ("k-1", "Karpenter NodePool", "gpu"), (GPU_B, None, None)]


def test_untaint_refuses_a_taint_capi_propagates_and_writes_nothing():
    fake = seed([GPU_TAINT], [GPU_TAINT], propagated="nvidia.com/gpu:NoSchedule")
    streams = buffers()
    with pytest.raises(ConflictError) as caught:
        run_command(fake, "untaint", streams=streams)
    assert caught.value.exit_code == EXIT_CONFLICT
    owner = ("is owned by Cluster API MachineDeployment nkpnai-gpupool-1-z9mz6, which puts it back "
             "(Cluster API propagates this pool's taints (propagation Always) and forces their "
             "values back)")
    assert str(caught.value) == (f"node {GPU_A}: taint nvidia.com/gpu:NoSchedule {owner}; "
                                 f"node {GPU_B}: taint nvidia.com/gpu:NoSchedule {owner}; "
                                 "change it there, not on the node (nothing was written)")
    assert "\n" not in str(caught.value)
    assert fake.log == [] and streams.out.getvalue() == ""


def test_untaint_removes_a_taint_capi_does_not_propagate():
    fake = seed([GPU_TAINT], None, propagated="dedicated:NoSchedule")
    code, out, _ = run_command(fake, "untaint")
    assert code == EXIT_OK and fake.log == [("taint", GPU_A)]
    assert out.splitlines() == [f"node/{GPU_A} untainted", f"node/{GPU_B} not tainted"]


def test_untaint_of_an_absent_owned_key_is_no_refusal():
    fake = seed(None, None, propagated="nvidia.com/gpu:NoSchedule")
    code, out, _ = run_command(fake, "untaint")
    assert code == EXIT_OK and fake.log == []


def test_taint_refuses_to_change_the_value_of_an_owned_taint():
    fake = seed([GPU_TAINT_PRESENT], None, propagated="nvidia.com/gpu:NoSchedule")
    with pytest.raises(ConflictError) as caught:
        run_command(fake, "taint", "--overwrite")
    assert str(caught.value).startswith(
        f"node {GPU_A}: taint nvidia.com/gpu=present:NoSchedule is owned by Cluster API "
        "MachineDeployment nkpnai-gpupool-1-z9mz6, which puts it back")
    assert fake.log == []


def test_taint_adds_an_owned_key_where_it_is_missing_and_keeps_a_same_value():
    fake = seed([GPU_TAINT], None, propagated="nvidia.com/gpu:NoSchedule")
    code, out, _ = run_command(fake, "taint")
    assert code == EXIT_OK and fake.log == [("taint", GPU_B)]
    assert out.splitlines() == [f"node/{GPU_A} already tainted", f"node/{GPU_B} tainted"]


@pytest.mark.parametrize("argv", [["taint"], ["evacuate", "--taint-first"], ["evacuate"]])
def test_on_autopilot_taint_and_evacuate_say_there_is_nothing_to_do(argv):
    fake = FakeCluster([gpu_node(GPU_A, labels=AUTOPILOT)], [])
    code, out, err = run_command(fake, *argv)
    assert code == EXIT_OK and fake.log == [] and out == ""
    assert err == ("GKE Autopilot: GKE already keeps pods that request no GPU off GPU nodes; "
                   "nothing to do\n")
