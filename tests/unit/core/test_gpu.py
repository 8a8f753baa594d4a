"""core/gpu.py: GPU nodes by capacity (or label), GPU pods by request."""

import pytest

from kubectl_gpuisolate.core import gpu

from ..factories import node, pod

CAPACITY_CASES = [
    ({"cpu": "48", "nvidia.com/gpu": "2"}, {"nvidia.com/gpu": 2}, "nvidia"),
    ({"cpu": "48", "amd.com/gpu": "8"}, {"amd.com/gpu": 8}, "amd"),
    ({"gpu.intel.com/i915": "1"}, {"gpu.intel.com/i915": 1}, "intel-i915"),
    ({"gpu.intel.com/xe": "4"}, {"gpu.intel.com/xe": 4}, "intel-xe"),
    ({"habana.ai/gaudi": "8"}, {"habana.ai/gaudi": 8}, "habana-gaudi"),
    ({"nvidia.com/mig-1g.5gb": "7"}, {"nvidia.com/mig-1g.5gb": 7}, "mig-slices"),
    ({"nvidia.com/gpu": "0"}, {}, "zero"),
    ({"nvidia.com/gpu": "0", "amd.com/gpu": "1"}, {"amd.com/gpu": 1}, "zero-and-one"),
    ({"cpu": "48", "memory": "384Gi", "pods": "110", "hugepages-1Gi": "0"}, {}, "no-gpu"),
    ({"example.com/fpga": "2", "example.com/gpu": "1", "nvidia.com.evil/gpu": "1"}, {},
     "lookalike-resources"),
    ({"nvidia.com/gpu.shared": "16"}, {"nvidia.com/gpu.shared": 16}, "time-sliced"),
    ({"aws.amazon.com/neuron": "1", "aws.amazon.com/neuroncore": "2"},
     {"aws.amazon.com/neuron": 1, "aws.amazon.com/neuroncore": 2}, "neuron"),
    ({"google.com/tpu": "4"}, {"google.com/tpu": 4}, "tpu"),
    ({"nvidia.com/gpu": "2k"}, {}, "not-an-integer"),
    ({}, {}, "empty-capacity"),
]


@pytest.mark.parametrize("capacity, expected", [c[:2] for c in CAPACITY_CASES],
                         ids=[c[2] for c in CAPACITY_CASES])
def test_gpu_capacity(capacity, expected):
    assert gpu.gpu_capacity(node(capacity=capacity)) == expected


def test_gpu_capacity_without_status():
    assert gpu.gpu_capacity({"metadata": {"name": "n"}}) == {}
    assert gpu.gpu_capacity({"metadata": {"name": "n"}, "status": None}) == {}


@pytest.mark.parametrize("capacity, labels, expected", [
    ({"nvidia.com/gpu": "2"}, {}, 2),
    ({"nvidia.com/gpu": "2"}, {"nvidia.com/gpu.count": "8"}, 2),
    ({"nvidia.com/gpu": "1", "amd.com/gpu": "2"}, {}, 3),
    ({"cpu": "4"}, {"nvidia.com/gpu.count": "4"}, 4),
    ({"nvidia.com/gpu": "0"}, {"nvidia.com/gpu.count": "2"}, 2),
    ({"cpu": "4"}, {}, 0),
    ({"cpu": "4"}, {"nvidia.com/gpu.count": "lots"}, 0),
], ids=["capacity", "capacity-beats-label", "capacity-summed", "label-fallback",
        "zero-capacity-label-fallback", "neither", "label-not-integer"])
def test_gpu_count(capacity, labels, expected):
    assert gpu.gpu_count(node(capacity=capacity, labels=labels)) == expected


def test_gpu_count_without_metadata_labels():
    assert gpu.gpu_count({"metadata": {"name": "n"}, "status": {"capacity": {}}}) == 0


@pytest.mark.parametrize("name, expected", [
    ("nvidia.com/gpu", True), ("amd.com/gpu", True), ("habana.ai/gaudi", True),
    ("habana.ai/gaudi2", True), ("gpu.intel.com/i915", True), ("nvidia.com/mig-3g.20gb", True),
    ("nvidia.com/gpu.shared", True), ("nvidia.com/mig-1g.10gb.me", True), ("nvidia.com/GRID_T4-1Q", True),
    ("aws.amazon.com/neuron", True), ("aws.amazon.com/neuroncore", True), ("google.com/tpu", True),
    ("aws.amazon.com/efa", False), ("google.com/tpux", False),
    ("cpu", False), ("memory", False), ("example.com/gpu", False),
], ids=lambda v: str(v))
def test_is_gpu_resource(name, expected):
    assert gpu.is_gpu_resource(name) is expected


def test_unselected_gpu_nodes():
    selected = node("selected", capacity={"nvidia.com/gpu": "2"})
    missed = node("missed", capacity={"amd.com/gpu": "1"})
    zero = node("zero", capacity={"nvidia.com/gpu": "0"})
    cpu = node("cpu", capacity={"cpu": "16"})
    label_only = node("label-only", labels={"nvidia.com/gpu.present": "true"})
    result = gpu.unselected_gpu_nodes([selected, missed, zero, cpu, label_only], [selected, label_only])
    assert [n["metadata"]["name"] for n in result] == ["missed"]


@pytest.mark.parametrize("labels, expected", [
    ({"nvidia.com/gpu.present": "true"}, True),
    ({"nvidia.com/gpu.present": "false"}, False),
    ({"nvidia.com/gpu.present": "True"}, False),
    ({}, False),
], ids=["true", "false", "capitalised", "absent"])
def test_has_gpu_label(labels, expected):
    assert gpu.has_gpu_label(node(labels=labels)) is expected


POD_CASES = [
    (dict(requests={"nvidia.com/gpu": "1"}), ["nvidia.com/gpu"], "request"),
    (dict(limits={"nvidia.com/gpu": "1"}), ["nvidia.com/gpu"], "limit-only"),
    (dict(requests={"cpu": "1"}, limits={"amd.com/gpu": "2"}), ["amd.com/gpu"], "amd-limit"),
    (dict(init_requests={"nvidia.com/gpu": "1"}), ["nvidia.com/gpu"], "init-container"),
    (dict(requests={"nvidia.com/mig-1g.5gb": "1"}), ["nvidia.com/mig-1g.5gb"], "mig"),
    (dict(requests={"gpu.intel.com/i915": "1"}), ["gpu.intel.com/i915"], "intel"),
    (dict(requests={"nvidia.com/gpu": "0"}), [], "zero"),
    (dict(requests={"cpu": "100m", "memory": "256Mi"}), [], "no-gpu"),
    (dict(), [], "no-resources"),
    (dict(requests={"nvidia.com/gpu": "1", "habana.ai/gaudi": "1"},
          init_requests={"amd.com/gpu": "1"}),
     ["amd.com/gpu", "habana.ai/gaudi", "nvidia.com/gpu"], "several-sorted"),
    (dict(requests={"nvidia.com/gpu": "1"}, limits={"nvidia.com/gpu": "1"}), ["nvidia.com/gpu"],
     "request-and-limit-once"),
    (dict(requests={"nvidia.com/gpu.shared": "1"}), ["nvidia.com/gpu.shared"], "time-sliced"),
    (dict(limits={"aws.amazon.com/neuroncore": "2"}), ["aws.amazon.com/neuroncore"], "neuron"),
    (dict(requests={"google.com/tpu": "4"}), ["google.com/tpu"], "tpu"),
]


@pytest.mark.parametrize("kwargs, expected", [c[:2] for c in POD_CASES],
                         ids=[c[2] for c in POD_CASES])
def test_pod_gpu_resources(kwargs, expected):
    assert gpu.pod_gpu_resources(pod(**kwargs)) == expected


def test_pod_gpu_resources_null_sections():
    bare = {"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "resources": None}], "initContainers": None}}
    assert gpu.pod_gpu_resources(bare) == []
    assert gpu.pod_gpu_resources({"metadata": {"name": "p"}}) == []


@pytest.mark.parametrize("claims, expected", [
    (None, []), (["gpu"], ["gpu"]), (["a", "b"], ["a", "b"]),
], ids=["none", "one", "two"])
def test_pod_resource_claims(claims, expected):
    assert gpu.pod_resource_claims(pod(claims=claims)) == expected


def test_pod_resource_claims_without_a_name():
    the_pod = {"metadata": {"name": "p"},
               "spec": {"resourceClaims": [{"resourceClaimName": "x"}, {"name": "b"}]}}
    assert gpu.pod_resource_claims(the_pod) == ["", "b"]
