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


CAPI_MD_WHERE = ("the bootstrap template of MachineDeployment nkpnai-gpupool-1-z9mz6 (KubeadmConfigTemplate "
                 "spec.template.spec.joinConfiguration.nodeRegistration.taints; NKP: the node pool's "
                 "workerConfig.taints), or with Cluster API >= v1.12 and the MachineTaintPropagation gate, "
                 "MachineDeployment nkpnai-gpupool-1-z9mz6 spec.template.spec.taints")
NODEPOOL_GPU_WHERE = ("NodePool gpu spec.template.spec.taints (kubectl edit nodepool gpu; every node of the "
                      "pool then drifts and is replaced)")
CAPI_REVERTS = ("Cluster API propagates this pool's taints (propagation Always) and forces their values "
                "back")
OPENSHIFT_REVERTS = "the machine-api nodelink controller re-adds a MachineSet taint removed by hand"
AKS_REVERTS = "taints set through the AKS node pool API cannot be changed from Kubernetes"


def capi(**annotations):
    return {"cluster.x-k8s.io/machine": "m-1", **{f"cluster.x-k8s.io/{k.replace('_', '-')}": v
                                                   for k, v in annotations.items()}}


def openshift_machine(value):
    return {"machine.openshift.io/machine": value}


M = managers.Manager
EXACT_CASES = [
    # (id, labels, annotations, the Manager, word for word)
    ("capi-md", {}, CAPI, M("Cluster API MachineDeployment", "nkpnai-gpupool-1-z9mz6", CAPI_MD_WHERE,
                            "machines", "")),
    ("capi-md-owned", {}, dict(CAPI, **{"cluster.x-k8s.io/taints-from-machine": "nvidia.com/gpu:NoSchedule"}),
     M("Cluster API MachineDeployment", "nkpnai-gpupool-1-z9mz6", CAPI_MD_WHERE, "machines", CAPI_REVERTS,
       frozenset({"nvidia.com/gpu"}))),
    ("capi-kcp", {}, capi(owner_kind="KubeadmControlPlane", owner_name="cp"),
     M("Cluster API KubeadmControlPlane", "cp",
       "the bootstrap template of KubeadmControlPlane cp (nodeRegistration.taints)", "machines", "")),
    ("capi-kcp-owned", {}, capi(owner_kind="KubeadmControlPlane", owner_name="cp",
                                taints_from_machine="a:NoSchedule"),
     M("Cluster API KubeadmControlPlane", "cp",
       "the bootstrap template of KubeadmControlPlane cp (nodeRegistration.taints)", "machines",
       CAPI_REVERTS, frozenset({"a"}))),
    ("capi-machine", {}, capi(),
     M("Cluster API Machine", "m-1", "the bootstrap template of Machine m-1 (nodeRegistration.taints)",
       "machines", "")),
    ("capi-machineset-without-owner-name", {}, capi(owner_kind="MachineSet"),
     M("Cluster API MachineSet", "m-1",
       "the bootstrap template of MachineSet m-1 (nodeRegistration.taints)", "machines", "")),
    # an annotation is free text: an odd owner kind is repeated as written, blanks and all
    ("capi-odd-kind", {}, capi(owner_kind=" Machine Pool", owner_name="p"),
     M("Cluster API  Machine Pool", "p",
       "the bootstrap template of  Machine Pool p (nodeRegistration.taints)", "machines", "")),
    ("karpenter", KARPENTER, {}, M("Karpenter NodePool", "gpu", NODEPOOL_GPU_WHERE, "nodes", "")),
    ("eks-auto-mode", AUTO_MODE, {}, M("EKS Auto Mode NodePool", "gpu", NODEPOOL_GPU_WHERE, "nodes", "")),
    ("gke", GKE, {}, M("GKE node pool", "gpu-pool", "the node pool: gcloud container node-pools update "
                       "gpu-pool --cluster=CLUSTER --node-taints=TAINTS", "nodes", "")),
    ("eks-mng", MNG, {}, M("EKS managed node group", "gpu-ng", "the node group: aws eks "
                           "update-nodegroup-config --cluster-name CLUSTER --nodegroup-name gpu-ng --taints "
                           "... (eksctl: managedNodeGroups[].taints)", "nodes", "")),
    ("aks", AKS, {}, M("AKS node pool", "gpunp", "the AKS node pool: az aks nodepool update --cluster-name "
                       "CLUSTER --resource-group GROUP --name gpunp --node-taints TAINTS", "nodes",
                       AKS_REVERTS)),
    ("openshift", {}, OPENSHIFT, M("OpenShift MachineSet", "gpu-worker", "MachineSet gpu-worker "
                                   "spec.template.spec.taints (oc edit machineset -n openshift-machine-api "
                                   "gpu-worker)", "machines", OPENSHIFT_REVERTS)),
    # the Machine's name is what follows the last "/", with or without a namespace before it
    ("openshift-no-namespace", {}, openshift_machine("gpu-worker-abc12"),
     M("OpenShift MachineSet", "gpu-worker", "MachineSet gpu-worker spec.template.spec.taints (oc edit "
       "machineset -n openshift-machine-api gpu-worker)", "machines", OPENSHIFT_REVERTS)),
    ("openshift-two-slashes", {}, openshift_machine("a/openshift-machine-api/gpu-worker-abc12"),
     M("OpenShift MachineSet", "gpu-worker", "MachineSet gpu-worker spec.template.spec.taints (oc edit "
       "machineset -n openshift-machine-api gpu-worker)", "machines", OPENSHIFT_REVERTS)),
    ("openshift-no-suffix", {}, openshift_machine("openshift-machine-api/worker"),
     M("OpenShift MachineSet", "worker", "MachineSet worker spec.template.spec.taints (oc edit "
       "machineset -n openshift-machine-api worker)", "machines", OPENSHIFT_REVERTS)),
]


@pytest.mark.parametrize("labels, annotations, expected", [c[1:] for c in EXACT_CASES],
                         ids=[c[0] for c in EXACT_CASES])
def test_each_manager_word_for_word(labels, annotations, expected):
    assert managers.manager_of(node(labels=labels, annotations=annotations)) == expected


@pytest.mark.parametrize("listed, keys", [
    ("nvidia.com/gpu:NoSchedule", {"nvidia.com/gpu"}),
    ("dedicated=gpu:NoSchedule, nvidia.com/gpu:NoSchedule", {"dedicated", "nvidia.com/gpu"}),
    ("a:NoSchedule,b=1:NoExecute,c", {"a", "b", "c"}),
    # the key ends at the first "=" or ":"
    ("nvidia.com/gpu=a=b:NoSchedule", {"nvidia.com/gpu"}),
    ("nvidia.com/gpu:NoSchedule:x", {"nvidia.com/gpu"}),
    ("nvidia.com/gpu:a=b", {"nvidia.com/gpu"}),
    (" , ,", set()),
    (":NoSchedule", set()),
    ("", set()),
], ids=["one", "two-with-value", "no-blanks", "two-equals", "two-colons", "colon-first", "blank-items",
        "no-key", "empty"])
def test_the_keys_of_capis_tracking_annotation(listed, keys):
    found = managers.manager_of(node(annotations=capi(taints_from_machine=listed)))
    assert found.owned_keys == frozenset(keys)
    assert found.reverts == (CAPI_REVERTS if keys else "")


@pytest.mark.parametrize("names, pools", [
    (["plain", "k"], ["gpu"]),
    (["k", "k", "g"], ["gpu", "gpu-pool"]),
    (["c", "plain", "c", "g", "k"], ["m-1", "gpu-pool", "gpu"]),
], ids=["unmanaged-first", "seen-first", "mixed"])
def test_pool_notes_go_on_past_unmanaged_nodes_and_seen_pools(names, pools):
    kinds = {"plain": node("plain"), "k": node(labels=KARPENTER), "g": node(labels=GKE),
             "c": node(annotations=capi())}
    notes = managers.pool_notes([kinds[n] for n in names], "persist it in")
    assert [note.split(" ", 2)[1] for note in notes] == pools


def test_a_pool_note_word_for_word():
    assert managers.pool_notes([node(annotations=OPENSHIFT)], "remove it from") == [
        "pool gpu-worker (OpenShift MachineSet): a taint written here is lost when the machines are "
        "replaced; remove it from MachineSet gpu-worker spec.template.spec.taints (oc edit machineset -n "
        "openshift-machine-api gpu-worker); the machine-api nodelink controller re-adds a MachineSet taint "
        "removed by hand"]
