"""kube/nodes.py find_nodes_with_version: the default picks by core.gpu's rules over the full node list;
-l replaces the rules and warns of GPU-capacity nodes it misses."""

import pytest

from kubectl_gpuisolate.core import selectors
from kubectl_gpuisolate.errors import NotFound
from kubectl_gpuisolate.kube import nodes as nodes_module

from ..factories import node

GKE = node("gke-1", labels={"cloud.google.com/gke-accelerator": "nvidia-l4"})
AKS = node("aks-1", labels={"kubernetes.azure.com/accelerator": "nvidia"})
OPERATOR = node("op-1", labels={"nvidia.com/gpu.present": "true"}, capacity={"nvidia.com/gpu": "2"})
CAPACITY = node("mng-1", capacity={"nvidia.com/gpu": "8"})
GONE = node("gone-1", labels={"nvidia.com/gpu.present": "false"}, capacity={"nvidia.com/gpu": "1"})
CPU = node("cpu-1")


class Listing:
    def __init__(self, nodes):
        self.nodes = nodes
        self.calls = []

    def list_nodes_with_version(self, selector=None):
        self.calls.append(selector)
        return list(self.nodes), "7"


def find(nodes, selector=None):
    warnings = []
    requirements = selectors.parse(selector) if selector else None
    found, version = nodes_module.find_nodes_with_version(Listing(nodes), (), requirements, selector,
                                                          warn=warnings.append)
    return [n["metadata"]["name"] for n in found], version, warnings


def test_the_default_finds_every_platforms_gpu_node_in_the_apis_order_without_warnings():
    assert find([CPU, GKE, GONE, AKS, OPERATOR, CAPACITY]) == (
        ["gke-1", "aks-1", "op-1", "mng-1"], "7", [])


def test_the_default_lists_every_node_without_a_selector():
    listing = Listing([GKE])
    nodes_module.find_nodes_with_version(listing, (), None, None, warn=print)
    assert listing.calls == [None]


def test_no_gpu_node_by_the_rules_is_one_line():
    with pytest.raises(NotFound) as caught:
        find([CPU, GONE])
    assert str(caught.value) == ("no GPU nodes found: no node has a GPU signal (docs/design.md); label "
                                 "them or pass -l/--selector or node names")
    assert "\n" not in str(caught.value)


def test_a_selector_replaces_the_rules_and_warns_of_capacity_it_misses():
    assert find([CPU, GKE, OPERATOR, CAPACITY, GONE], "nvidia.com/gpu.present=true") == (
        ["op-1"], "7",
        ["node(s) with GPU capacity are not selected by nvidia.com/gpu.present=true: mng-1, gone-1"])
    # -l picks what it matches, GPU node or not; GKE's node has no capacity yet, so no warning
    assert find([node("cpu-2", labels={"pool": "cpu"}), GKE], "pool=cpu") == (["cpu-2"], "7", [])


def test_a_selector_matching_nothing():
    with pytest.raises(NotFound) as caught:
        find([GKE], "pool=none")
    assert str(caught.value) == ("no GPU nodes found: no node matches pool=none; label them or pass "
                                 "another -l/--selector or node names")
