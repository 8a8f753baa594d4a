"""core/managers.py: each platform's node markers (research platforms.md §1, §5.1, "Scenarios to
test") give the node's manager, its pool and where a taint belongs."""

import pytest

from kubectl_gpuisolate.core import managers

from ..design_tables import code_names, design_rows


def node(name="n1", labels=None, annotations=None):
    return {"metadata": {"name": name, "labels": dict(labels or {}),
                         "annotations": dict(annotations or {})}}


CAPI = {"cluster.x-k8s.io/cluster-name": "nkpnai",
        "cluster.x-k8s.io/machine": "nkpnai-gpupool-1-z9mz6-pl9k2-4n5fm",
        "cluster.x-k8s.io/owner-kind": "MachineSet",
        "cluster.x-k8s.io/owner-name": "nkpnai-gpupool-1-z9mz6-pl9k2"}
KARPENTER = {"karpenter.sh/nodepool": "gpu", "karpenter.sh/capacity-type": "on-demand",
             "karpenter.sh/registered": "true", "karpenter.k8s.aws/instance-gpu-name": "a10g"}
AUTO_MODE = {"eks.amazonaws.com/compute-type": "auto", "karpenter.sh/nodepool": "gpu",
             "eks.amazonaws.com/instance-gpu-name": "l4"}
GKE = {"cloud.google.com/gke-accelerator": "nvidia-l4", "cloud.google.com/gke-nodepool": "gpu-pool"}
MNG = {"eks.amazonaws.com/nodegroup": "gpu-ng", "eks.amazonaws.com/nodegroup-image": "ami-0abc"}
AKS = {"kubernetes.azure.com/agentpool": "gpunp", "agentpool": "gpunp",
       "kubernetes.azure.com/accelerator": "nvidia", "kubernetes.azure.com/mode": "user"}
OPENSHIFT = {"machine.openshift.io/machine": "openshift-machine-api/gpu-worker-abc12"}

CASES = [
    # (id, labels, annotations, kind, pool, replaced, words in `where`)
    ("capi-md", {"nvidia.com/gpu.present": "true"}, CAPI, "Cluster API MachineDeployment",
     "nkpnai-gpupool-1-z9mz6", "machines",
     ["KubeadmConfigTemplate", "nodeRegistration.taints", "workerConfig.taints",
      "MachineDeployment nkpnai-gpupool-1-z9mz6 spec.template.spec.taints", "v1.12"]),
    ("capi-kcp", {}, dict(CAPI, **{"cluster.x-k8s.io/owner-kind": "KubeadmControlPlane",
                                   "cluster.x-k8s.io/owner-name": "nkpnai-cp"}),
     "Cluster API KubeadmControlPlane", "nkpnai-cp", "machines", ["KubeadmControlPlane nkpnai-cp"]),
    ("capi-bare-machine", {}, {"cluster.x-k8s.io/machine": "m-1"}, "Cluster API Machine", "m-1",
     "machines", ["Machine m-1"]),
    ("capi-on-a-cloud", GKE, CAPI, "Cluster API MachineDeployment", "nkpnai-gpupool-1-z9mz6",
     "machines", ["KubeadmConfigTemplate"]),
    ("karpenter", KARPENTER, {}, "Karpenter NodePool", "gpu", "nodes",
     ["NodePool gpu spec.template.spec.taints", "kubectl edit nodepool gpu", "drifts"]),
    ("eks-auto-mode", AUTO_MODE, {}, "EKS Auto Mode NodePool", "gpu", "nodes",
     ["NodePool gpu spec.template.spec.taints"]),
    ("gke", GKE, {}, "GKE node pool", "gpu-pool", "nodes",
     ["gcloud container node-pools update gpu-pool", "--node-taints"]),
    ("eks-mng", MNG, {}, "EKS managed node group", "gpu-ng", "nodes",
     ["aws eks update-nodegroup-config", "--nodegroup-name gpu-ng", "managedNodeGroups[].taints"]),
    ("aks", AKS, {}, "AKS node pool", "gpunp", "nodes",
     ["az aks nodepool update", "--name gpunp", "--node-taints"]),
    ("openshift", {"node-role.kubernetes.io/worker": ""}, OPENSHIFT, "OpenShift MachineSet",
     "gpu-worker", "machines", ["MachineSet gpu-worker spec.template.spec.taints", "oc edit machineset"]),
]


@pytest.mark.parametrize("labels, annotations, kind, pool, replaced, words",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_platform_gives_its_manager_pool_and_where_the_taint_belongs(
        labels, annotations, kind, pool, replaced, words):
    found = managers.manager_of(node(labels=labels, annotations=annotations))
    assert (found.kind, found.pool, found.replaced) == (kind, pool, replaced)
    for word in words:
        assert word in found.where
    assert found.survives_replacement is False


@pytest.mark.parametrize("labels, annotations", [
    ({}, {}), ({"nvidia.com/gpu.present": "true"}, {"cluster.x-k8s.io/cluster-name": "c"}),
    ({"eks.amazonaws.com/compute-type": "auto"}, {}), ({"agentpool": "gpunp"}, {}),
])
def test_a_node_without_a_managers_markers_has_no_manager(labels, annotations):
    assert managers.manager_of(node(labels=labels, annotations=annotations)) is None


def test_missing_metadata_is_no_manager():
    assert managers.manager_of({}) is None
    assert managers.manager_of({"metadata": {"labels": None, "annotations": None}}) is None


@pytest.mark.parametrize("labels, annotations, reverts", [
    (AKS, {}, "AKS node pool API"), ({}, OPENSHIFT, "nodelink"),
    (KARPENTER, {}, ""), (MNG, {}, ""), (GKE, {}, ""), ({}, CAPI, ""),
])
def test_what_reverts_a_kubectl_change(labels, annotations, reverts):
    found = managers.manager_of(node(labels=labels, annotations=annotations))
    assert (reverts in found.reverts) and (bool(found.reverts) == bool(reverts))


@pytest.mark.parametrize("listed, key, owned", [
    ("nvidia.com/gpu:NoSchedule", "nvidia.com/gpu", True),
    ("dedicated=gpu:NoSchedule, nvidia.com/gpu:NoSchedule", "nvidia.com/gpu", True),
    ("nvidia.com/gpu", "nvidia.com/gpu", True),
    ("dedicated:NoSchedule", "nvidia.com/gpu", False),
    ("", "nvidia.com/gpu", False),
])
def test_capi_owns_only_the_keys_its_tracking_annotation_lists(listed, key, owned):
    annotations = dict(CAPI, **{"cluster.x-k8s.io/taints-from-machine": listed})
    found = managers.owner_of_key(node(annotations=annotations), key)
    assert (found is not None) is owned
    if owned:
        assert "forces their values back" in found.reverts


@pytest.mark.parametrize("labels, annotations",
                         [(AKS, {}), ({}, OPENSHIFT), (KARPENTER, {}), ({}, CAPI)])
def test_no_marker_no_owner(labels, annotations):
    """Conservative: AKS and OpenShift do revert, but a node does not say which taints."""
    assert managers.owner_of_key(node(labels=labels, annotations=annotations),
                                 "nvidia.com/gpu") is None


def test_pool_notes_come_once_per_pool_in_node_order():
    nodes = [node("a", annotations=CAPI), node("k1", labels=KARPENTER), node("b", annotations=CAPI),
             node("plain"), node("k2", labels=KARPENTER)]
    notes = managers.pool_notes(nodes, "persist it in")
    assert len(notes) == 2
    assert notes[0].startswith("pool nkpnai-gpupool-1-z9mz6 (Cluster API MachineDeployment): a "
                               "taint written here is lost when the machines are replaced; "
                               "persist it in the bootstrap template of MachineDeployment "
                               "nkpnai-gpupool-1-z9mz6")
    assert notes[1].startswith("pool gpu (Karpenter NodePool): a taint written here is lost when "
                               "the nodes are replaced; persist it in NodePool gpu")


def test_pool_notes_name_what_reverts():
    (note,) = managers.pool_notes([node(labels=AKS)], "remove it from")
    assert note.endswith("--node-taints TAINTS; taints set through the AKS node pool API cannot "
                         "be changed from Kubernetes")


def test_pools_of_two_kinds_with_one_name_are_two_pools():
    notes = managers.pool_notes([node(labels=KARPENTER), node(labels=AUTO_MODE)], "persist it in")
    assert len(notes) == 2


@pytest.mark.parametrize("labels, autopilot", [
    ({"cloud.google.com/compute-class": "Accelerator",
      "cloud.google.com/gke-accelerator": "nvidia-l4"}, True),
    ({"cloud.google.com/compute-class": "Accelerator"}, False),
    ({"cloud.google.com/compute-class": "my-class", "cloud.google.com/gke-accelerator": "nvidia-l4"}, False),
    (GKE, False),
])
def test_autopilot_by_its_accelerator_compute_class(labels, autopilot):
    assert managers.is_autopilot(node(labels=labels)) is autopilot


def test_rules_order_puts_the_specific_markers_first():
    names = [r.__name__ for r in managers.RULES]
    assert names.index("cluster_api") < names.index("gke")
    assert names.index("eks_auto_mode") < names.index("karpenter")


def test_the_design_table_lists_the_rules_in_order():
    rows = design_rows("## Who owns the taint")
    assert [code_names(row["rule"]) for row in rows] == [[r.__name__] for r in managers.RULES]
