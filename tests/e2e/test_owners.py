"""Who owns the taint, against the seed sandbox: the seed's nodes are Cluster API machines
(tests/sandbox/sandboxctl/seed.py), so taint, untaint and status say once per pool where a
taint belongs; a node relabelled as another platform gets that platform's advice; a taint
Cluster API propagates is refused; GKE Autopilot is left alone."""

import json

import pytest

GPU_NODES = ["nkpnai-gpupool-1-z9mz6-pl9k2-4n5fm", "nkpnai-gpupool-1-z9mz6-pl9k2-9xdn9"]
POOL_NOTE = ("Warning: pool nkpnai-gpupool-1-z9mz6 (Cluster API MachineDeployment): a taint "
             "written here is lost when the machines are replaced; ")
CAPI_KEYS = ["cluster.x-k8s.io/machine", "cluster.x-k8s.io/owner-kind", "cluster.x-k8s.io/owner-name",
             "cluster.x-k8s.io/cluster-name", "cluster.x-k8s.io/cluster-namespace"]


def pool_notes(stderr):
    return [line for line in stderr.splitlines() if line.startswith("Warning: pool ")]


def node_json(sandbox, name):
    return json.loads(sandbox.kubectl("get", "node", name, "-o", "json").stdout)


def as_platform(sandbox, name, labels, annotations=None):
    """Makes ``name`` look like another platform's node: without Cluster API's annotations,
    with ``labels`` (the `clean` fixture's reset puts the seed's back)."""
    sandbox.kubectl("annotate", "node", name, *[f"{k}-" for k in CAPI_KEYS])
    if labels:
        sandbox.kubectl("label", "node", name, *[f"{k}={v}" for k, v in labels.items()])
    if annotations:
        sandbox.kubectl("annotate", "node", name, *[f"{k}={v}" for k, v in annotations.items()])


def test_the_seed_nodes_are_cluster_api_machines(sandbox):
    annotations = node_json(sandbox, GPU_NODES[0])["metadata"]["annotations"]
    assert annotations["cluster.x-k8s.io/owner-kind"] == "MachineSet"
    assert annotations["cluster.x-k8s.io/owner-name"] == "nkpnai-gpupool-1-z9mz6-pl9k2"
    assert annotations["cluster.x-k8s.io/machine"] == GPU_NODES[0]


@pytest.mark.parametrize("argv, action", [
    (["taint"], "persist it in"), (["untaint"], "remove it from"),
    (["status"], "persist the GPU taint in"),
])
def test_the_pool_note_comes_once_for_the_pools_two_nodes(gpuisolate, clean, argv, action):
    result = gpuisolate(*argv)
    assert result.returncode == 0, result.stderr
    notes = pool_notes(result.stderr)
    assert len(notes) == 1, result.stderr
    assert notes[0].startswith(POOL_NOTE + action + " the bootstrap template of MachineDeployment "
                               "nkpnai-gpupool-1-z9mz6 (KubeadmConfigTemplate")
    assert "MachineDeployment nkpnai-gpupool-1-z9mz6 spec.template.spec.taints" in notes[0]


def test_status_json_carries_manager_and_pool(gpuisolate, sandbox):
    result = gpuisolate("status", "-o", "json")
    assert result.returncode == 0, result.stderr
    found = [(n["name"], n["manager"], n["pool"]) for n in json.loads(result.stdout)["nodes"]]
    assert found == [(n, "Cluster API MachineDeployment", "nkpnai-gpupool-1-z9mz6") for n in GPU_NODES]


@pytest.mark.parametrize("labels, annotations, manager, pool, words", [
    ({"karpenter.sh/nodepool": "gpu"}, None, "Karpenter NodePool", "gpu",
     "persist it in NodePool gpu spec.template.spec.taints (kubectl edit nodepool gpu;"),
    ({"kubernetes.azure.com/agentpool": "gpunp"}, None, "AKS node pool", "gpunp",
     "persist it in the AKS node pool: az aks nodepool update"),
    ({}, {"machine.openshift.io/machine": "openshift-machine-api/gpu-worker-abc12"},
     "OpenShift MachineSet", "gpu-worker", "re-adds a MachineSet taint removed by hand"),
], ids=["karpenter", "aks", "openshift"])
def test_a_node_of_another_platform_gets_its_advice(gpuisolate, clean, labels, annotations, manager,
                                                     pool, words):
    as_platform(clean, GPU_NODES[1], labels, annotations)
    result = gpuisolate("taint")
    assert result.returncode == 0, result.stderr
    notes = pool_notes(result.stderr)
    assert len(notes) == 2 and notes[0].startswith(POOL_NOTE), result.stderr
    assert notes[1].startswith(f"Warning: pool {pool} ({manager}): a taint written here is lost"), notes
    assert words in notes[1]
    doc = json.loads(gpuisolate("status", "-o", "json").stdout)
    assert [(n["manager"], n["pool"]) for n in doc["nodes"]] == [
        ("Cluster API MachineDeployment", "nkpnai-gpupool-1-z9mz6"), (manager, pool)]


def test_untaint_refuses_a_taint_cluster_api_propagates(gpuisolate, clean):
    assert gpuisolate("taint").returncode == 0
    clean.kubectl("annotate", "node", GPU_NODES[0],
                  "cluster.x-k8s.io/taints-from-machine=nvidia.com/gpu:NoSchedule")
    versions = {n: node_json(clean, n)["metadata"]["resourceVersion"] for n in GPU_NODES}
    refused = gpuisolate("untaint")
    assert refused.returncode == 7
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"error: node {GPU_NODES[0]}: taint nvidia.com/gpu:NoSchedule is owned by Cluster API "
        "MachineDeployment nkpnai-gpupool-1-z9mz6, which puts it back"), refused.stderr
    assert refused.stdout == ""
    assert {n: node_json(clean, n)["metadata"]["resourceVersion"] for n in GPU_NODES} == versions
    clean.kubectl("annotate", "node", GPU_NODES[0], "cluster.x-k8s.io/taints-from-machine-")


def test_gke_autopilot_has_nothing_to_do(gpuisolate, clean):
    as_platform(clean, GPU_NODES[0], {"cloud.google.com/compute-class": "Accelerator",
                                      "cloud.google.com/gke-accelerator": "nvidia-l4"})
    versions = {n: node_json(clean, n)["metadata"]["resourceVersion"] for n in GPU_NODES}
    for argv in (["taint"], ["evacuate", "--taint-first"]):
        result = gpuisolate(*argv)
        assert result.returncode == 0, result.stderr
        assert result.stderr == ("GKE Autopilot: GKE already keeps pods that request no GPU off "
                                 "GPU nodes; nothing to do\n")
        assert result.stdout == ""
    assert {n: node_json(clean, n)["metadata"]["resourceVersion"] for n in GPU_NODES} == versions
