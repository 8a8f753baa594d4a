"""core/gpu.py's NODE_RULES: each platform's GPU node, found with its signal, and the table in
docs/design.md "GPU nodes" pinned against the code, row by row.

The node shapes are those of /work/shared/research/platforms.md §1 (labels and capacity as each platform
writes them)."""

import pytest

from kubectl_gpuisolate.core import gpu

from ..design_tables import code_names, design_rows
from ..factories import node

HEADING = "## GPU nodes"

GKE = {"cloud.google.com/gke-accelerator": "nvidia-tesla-t4", "cloud.google.com/gke-nodepool": "gpu-pool"}
KARPENTER = {"karpenter.sh/nodepool": "gpu", "karpenter.k8s.aws/instance-gpu-count": "1",
             "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia"}
EKS_AUTO = {"eks.amazonaws.com/compute-type": "auto", "eks.amazonaws.com/instance-gpu-count": "4"}

# (labels, capacity, signal code or None for "not a GPU node", id)
CASES = [
    ({"nvidia.com/gpu.present": "true"}, {}, "gpu-operator-label", "gpu-operator"),
    ({"nvidia.com/gpu.present": "true", **GKE}, {"nvidia.com/gpu": "1"}, "gpu-operator-label",
     "operator-first"),
    ({"nvidia.com/gpu.present": "false", **GKE}, {"nvidia.com/gpu": "1"}, None, "operator-gpus-gone"),
    ({"nvidia.com/gpu.present": "True"}, {}, None, "operator-capitalised"),
    ({}, {"nvidia.com/gpu": "8"}, "accelerator-capacity", "eks-managed-node-group"),
    ({}, {"nvidia.com/gpu.shared": "16"}, "accelerator-capacity", "time-sliced"),
    ({}, {"nvidia.com/mig-1g.5gb": "7"}, "accelerator-capacity", "mig-mixed"),
    ({}, {"aws.amazon.com/neuron": "1"}, "accelerator-capacity", "neuron"),
    ({}, {"nvidia.com/gpu": "0", "cpu": "8"}, None, "zero-capacity"),
    (GKE, {}, "gke-accelerator-label", "gke-before-the-device-plugin"),
    (GKE, {"nvidia.com/gpu": "1"}, "accelerator-capacity", "gke-with-capacity"),
    ({"kubernetes.azure.com/accelerator": "nvidia", "kubernetes.azure.com/agentpool": "gpunp"}, {},
     "aks-accelerator-label", "aks"),
    ({"accelerator": "nvidia"}, {}, "aks-legacy-accelerator-label", "aks-legacy"),
    ({"accelerator": "tpu"}, {}, None, "legacy-other-value"),
    (KARPENTER, {}, "karpenter-gpu-count", "karpenter"),
    ({"karpenter.k8s.aws/instance-gpu-count": "0"}, {}, None, "karpenter-cpu"),
    (EKS_AUTO, {}, "eks-auto-gpu-count", "eks-auto-mode"),
    ({"eks.amazonaws.com/instance-gpu-count": "none"}, {}, None, "eks-auto-not-a-count"),
    ({"karpenter.azure.com/sku-gpu-count": "1", "karpenter.azure.com/sku-gpu-name": "A100"}, {},
     "aks-nap-gpu-count", "aks-nap"),
    ({"feature.node.kubernetes.io/pci-10de.present": "true"}, {}, "nfd-pci-label", "openshift-nfd"),
    ({"feature.node.kubernetes.io/pci-0302_10de.present": "true"}, {}, "nfd-pci-label", "nkp-nfd"),
    ({"feature.node.kubernetes.io/pci-0300_10de.present": "true"}, {}, "nfd-pci-label", "nfd-vga"),
    ({"feature.node.kubernetes.io/pci-10de.present": "false"}, {}, None, "nfd-false"),
    ({"node.kubernetes.io/instance-type": "g5.xlarge"}, {"cpu": "4"}, None, "cpu-only"),
]


@pytest.mark.parametrize("labels, capacity, code", [c[:3] for c in CASES], ids=[c[3] for c in CASES])
def test_each_platforms_gpu_node_is_found_with_its_signal(labels, capacity, code):
    the_node = node("n", labels=labels, capacity=capacity)
    signal = gpu.node_signal(the_node)
    assert gpu.is_gpu_node(the_node) is (code is not None)
    if code is not None:
        assert signal.code == code
    else:
        assert signal.code in ("none", "gpu-operator-gone")


@pytest.mark.parametrize("labels, capacity, message", [
    ({"nvidia.com/gpu.present": "true"}, {}, "labelled nvidia.com/gpu.present=true (GPU Operator)"),
    ({"nvidia.com/gpu.present": "false"}, {}, "labelled nvidia.com/gpu.present=false: its GPUs are gone"),
    ({}, {"nvidia.com/mig-1g.5gb": "7", "nvidia.com/gpu": "1"},
     "has accelerator capacity nvidia.com/gpu=1, nvidia.com/mig-1g.5gb=7"),
    (GKE, {}, "labelled cloud.google.com/gke-accelerator=nvidia-tesla-t4 (GKE)"),
    (KARPENTER, {}, "labelled karpenter.k8s.aws/instance-gpu-count=1 (Karpenter)"),
    ({"feature.node.kubernetes.io/pci-0302_10de.present": "true"}, {},
     "labelled feature.node.kubernetes.io/pci-0302_10de.present=true (NFD: an NVIDIA PCI device)"),
    ({}, {}, "no GPU signal; selected by -l/--selector or by name"),
], ids=["operator", "gone", "capacity", "gke", "karpenter", "nfd", "none"])
def test_signal_sentences(labels, capacity, message):
    assert gpu.node_signal(node("n", labels=labels, capacity=capacity)).message == message


def test_gpu_nodes_keeps_the_order_and_drops_the_others():
    nodes = [node("b", labels=GKE), node("cpu"), node("a", labels=KARPENTER),
             node("gone", labels={"nvidia.com/gpu.present": "false"}, capacity={"nvidia.com/gpu": "1"})]
    assert [n["metadata"]["name"] for n in gpu.gpu_nodes(nodes)] == ["b", "a"]


def test_a_node_without_metadata_or_status_has_no_signal():
    assert gpu.node_signal({"metadata": {"name": "n"}}) is gpu.NONE
    assert gpu.node_signal({"metadata": {"name": "n", "labels": None}, "status": None}) is gpu.NONE


# -- the table in docs/design.md -------------------------------------------------------------------
ROWS = design_rows(HEADING)


def test_the_table_names_every_rule_in_order():
    names = [code_names(row["rule"]) for row in ROWS]
    assert names == [[rule.__name__] for rule in gpu.NODE_RULES]


@pytest.mark.parametrize("labels, capacity, code", [c[:3] for c in CASES if c[2]],
                         ids=[c[3] for c in CASES if c[2]])
def test_each_signal_comes_from_the_row_that_documents_it(labels, capacity, code):
    the_node = node("n", labels=labels, capacity=capacity)
    deciding = next(rule for rule in gpu.NODE_RULES if rule(the_node) is not None)
    row = next(r for r in ROWS if r["rule"] == f"`{deciding.__name__}`")
    assert code in code_names(row["signal"])


def test_every_documented_signal_has_a_case():
    documented = {code for row in ROWS for code in code_names(row["signal"])}
    gone = gpu.node_signal(node("n", labels={"nvidia.com/gpu.present": "false"})).code
    assert documented == {c[2] for c in CASES if c[2]} | {gone}


# -- _label_rule, the factory of the label rules ----------------------------------------------------
# Called here, not only through the rules it built at import: a rule on one label, present (any
# value), equal to a value, or a count > 0, with the code, the sentence and the function's name.
LABEL_RULE_CASES = [
    # (kwargs, labels, signal message or None, id)
    ({}, {"x.io/gpu": "a100"}, "labelled x.io/gpu=a100 (Some platform)", "any-value"),
    ({}, {"x.io/gpu": ""}, "labelled x.io/gpu= (Some platform)", "any-value-empty"),
    ({}, {"x.io/gpu": "0"}, "labelled x.io/gpu=0 (Some platform)", "any-value-not-a-count"),
    ({}, {"x.io/other": "a100"}, None, "absent"),
    ({}, {}, None, "no-labels"),
    ({"value": "nvidia"}, {"x.io/gpu": "nvidia"}, "labelled x.io/gpu=nvidia (Some platform)",
     "value-equal"),
    ({"value": "nvidia"}, {"x.io/gpu": "tpu"}, None, "value-other"),
    ({"value": "nvidia"}, {"x.io/gpu": "Nvidia"}, None, "value-case"),
    ({"value": "nvidia"}, {}, None, "value-absent"),
    ({"count": True}, {"x.io/gpu": "1"}, "labelled x.io/gpu=1 (Some platform)", "count-one"),
    ({"count": True}, {"x.io/gpu": "8"}, "labelled x.io/gpu=8 (Some platform)", "count-eight"),
    ({"count": True}, {"x.io/gpu": "0"}, None, "count-zero"),
    ({"count": True}, {"x.io/gpu": "-1"}, None, "count-negative"),
    ({"count": True}, {"x.io/gpu": "many"}, None, "count-not-a-number"),
    ({"count": True}, {}, None, "count-absent"),
]


@pytest.mark.parametrize("kwargs, labels, message", [c[:3] for c in LABEL_RULE_CASES],
                         ids=[c[3] for c in LABEL_RULE_CASES])
def test_label_rule(kwargs, labels, message):
    rule = gpu._label_rule("some-gpu-label", "x.io/gpu", "Some platform", **kwargs)
    found = rule(node("n", labels=labels))
    expected = None if message is None else gpu.NodeSignal("some-gpu-label", message)
    assert found == expected
    assert rule.__name__ == "some_gpu_label"


def test_label_rule_on_a_node_without_labels():
    assert gpu._label_rule("c", "k", "P")({"metadata": {"name": "n", "labels": None}}) is None
    assert gpu._label_rule("c", "k", "P")({}) is None
