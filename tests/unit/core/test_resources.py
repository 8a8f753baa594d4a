"""core/resources.py, table-driven with plain dicts: quantities, a pod's effective requests (as
the scheduler computes them), free allocatable per node, and the shortfall arithmetic."""

from fractions import Fraction

import pytest

from kubectl_gpuisolate.core import resources
from kubectl_gpuisolate.core.resources import (
    EACH,
    UNION,
    InvalidQuantity,
    Shortfall,
    free_allocatable,
    parse_quantity,
    pod_requests,
    shortfalls,
)

GI = 2 ** 30


@pytest.mark.parametrize("text, value", [
    ("500m", Fraction(1, 2)), ("1Gi", GI), ("1e3", 1000), ("1E3", 1000), ("1.5", Fraction(3, 2)),
    ("100Ki", 102400), ("1M", 10 ** 6), ("2k", 2000), ("1E", 10 ** 18), ("12345", 12345),
    ("0", 0), ("250u", Fraction(1, 4000)), ("3n", Fraction(3, 10 ** 9)), ("1Mi", 2 ** 20),
    ("2Ti", 2 * 2 ** 40), ("1Pi", 2 ** 50), ("1Ei", 2 ** 60), ("1G", 10 ** 9), ("1T", 10 ** 12),
    ("1P", 10 ** 15), (".5", Fraction(1, 2)), ("5.", 5), ("1e-3", Fraction(1, 1000)),
    ("+2", 2), ("-1", -1), ("0.1m", Fraction(1, 10000)), ("1.5Gi", 3 * GI // 2),
    (2, 2), (0.5, Fraction(1, 2)),
])
def test_quantities(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1e", "1Gb", "1.2.3", "m", "1 Gi", "Gi", "1ki", "0x10",
                                  None, True, [1]])
def test_malformed_quantities_are_a_clear_error(text):
    with pytest.raises(InvalidQuantity, match="not a quantity"):
        parse_quantity(text)


def container(cpu=None, memory=None, restart=None):
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    found = {"name": "c", "resources": {"requests": requests}}
    if restart:
        found["restartPolicy"] = restart
    return found


def pod_with(containers=(), init=(), overhead=None, pod_level=None, node=None):
    spec = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    if overhead:
        spec["overhead"] = overhead
    if pod_level:
        spec["resources"] = {"requests": pod_level}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": "p"}, "spec": spec}


SIDECAR = "Always"


@pytest.mark.parametrize("pod, cpu, memory", [
    # the app containers add up
    (pod_with([container("500m", "1Gi"), container("1", "512Mi")]), Fraction(3, 2), GI + GI // 2),
    # a larger init container wins
    (pod_with([container("500m", "1Gi")], init=[container("2", "256Mi")]), 2, GI),
    # init containers run one at a time: the largest counts, not their sum
    (pod_with([container("100m")], init=[container("1"), container("1")]), 1, 0),
    # sidecars run beside the app containers: added to them
    (pod_with([container("1", "1Gi")], init=[container("500m", "1Gi", SIDECAR)]),
     Fraction(3, 2), 2 * GI),
    # an init container after a sidecar runs beside it
    (pod_with([container("100m")], init=[container("1", restart=SIDECAR), container("2")]), 3, 0),
    # an init container before the sidecar does not
    (pod_with([container("100m")], init=[container("2"), container("1", restart=SIDECAR)]),
     2, 0),
    # overhead (RuntimeClass) is added
    (pod_with([container("1", "1Gi")], overhead={"cpu": "250m", "memory": "120Mi"}),
     Fraction(5, 4), GI + 120 * 2 ** 20),
    # pod-level requests replace the containers' sum for what they name
    (pod_with([container("1", "1Gi"), container("1")], pod_level={"cpu": "3"}), 3, GI),
    # no requests at all
    (pod_with([{"name": "c"}]), 0, 0),
    (pod_with([container("1e-1", "1e3")]), Fraction(1, 10), 1000),
    # a malformed value counts as 0
    (pod_with([container("lots", "1Gi"), container("1")]), 1, GI),
])
def test_effective_requests(pod, cpu, memory):
    found = pod_requests(pod)
    assert (found.get("cpu", 0), found.get("memory", 0)) == (cpu, memory)


def node(name, cpu, memory, capacity_only=False):
    key = "capacity" if capacity_only else "allocatable"
    return {"metadata": {"name": name},
            "status": {key: {"cpu": cpu, "memory": memory, "pods": "110"}}}


def test_free_allocatable_subtracts_the_pods_bound_there():
    nodes = [node("a", "4", "8Gi"), node("b", "16", "64Gi", capacity_only=True)]
    pods = [pod_with([container("1500m", "1Gi")], node="a"),
            pod_with([container("1", "2Gi")], init=[container("3")], node="a"),
            pod_with([container("5", "1Gi")], node="b"),
            pod_with([container("8")]),                         # unbound: no node's
            pod_with([container("8")], node="elsewhere")]       # not one of the nodes
    free = free_allocatable(nodes, pods)
    assert free["a"]["cpu"] == Fraction(-1, 2) and free["a"]["memory"] == 5 * GI
    assert free["b"]["cpu"] == 11 and free["b"]["memory"] == 63 * GI
    assert free["a"]["pods"] == 110 and set(free) == {"a", "b"}


def cores(n):
    return {"cpu": Fraction(n), "memory": Fraction(0)}


FREE = {"a": {"cpu": Fraction(2), "memory": Fraction(8 * GI)},
        "b": {"cpu": Fraction(3, 2), "memory": Fraction(GI)},
        "c": {"cpu": Fraction(-1), "memory": Fraction(GI)},     # overcommitted: counts as 0 CPU
        "d": {"cpu": Fraction(10), "memory": Fraction(0)},
        "e": {"cpu": Fraction(2), "memory": Fraction(0)}}


@pytest.mark.parametrize("moving, expected", [
    # fits: nothing to say
    ([(cores(1), ("a",)), (cores(1), ("a",))], []),
    # one landing set short of CPU
    ([(cores(2), ("a", "b")), (cores("1.5"), ("b", "a"))], []),      # exactly full
    ([(cores(2), ("a", "b")), (cores(2), ("b", "a"))],
     [Shortfall("cpu", 2, Fraction(4), Fraction(7, 2), ("a", "b"))]),
    # a node with negative free counts as 0
    ([(cores("0.5"), ("c",))], [Shortfall("cpu", 1, Fraction(1, 2), Fraction(0), ("c",))]),
    # memory too, and a node not known has nothing free
    ([({"cpu": Fraction(0), "memory": Fraction(2 * GI)}, ("b", "zz"))],
     [Shortfall("memory", 1, Fraction(2 * GI), Fraction(GI), ("b", "zz"))]),
    # two sets that fit, alone and together
    ([(cores("1.5"), ("a",)), (cores(2), ("a", "b"))], []),
    # each set fits alone, not together: the union is short
    ([(cores(2), ("a",)), (cores("1.5"), ("a", "b")), (cores("0.5"), ("b",))],
     [Shortfall("cpu", 3, Fraction(4), Fraction(7, 2), ("a", "b"), UNION)]),
    # the union is not said again for a resource a set alone is short of
    ([(cores(3), ("a",)), (cores(1), ("b",))],
     [Shortfall("cpu", 1, Fraction(3), Fraction(2), ("a",))]),
    # the sum fits, but a pod is not split: one too large for any node alone
    ([(cores("2.5"), ("a", "b")), (cores(1), ("a", "b"))],
     [Shortfall("cpu", 1, Fraction(5, 2), Fraction(2), ("a",), EACH)]),
    ([(cores("2.25"), ("e", "a")), (cores(1), ("a", "e"))],
     [Shortfall("cpu", 1, Fraction(9, 4), Fraction(2), ("a",), EACH)]),
    ([(cores("2.25"), ("a", "e", "b")), (cores("2.5"), ("b", "e", "a"))],
     [Shortfall("cpu", 2, Fraction(5, 2), Fraction(2), ("a",), EACH)]),
    # a pod too large for every node: the set's sum is short, said once
    ([(cores(12), ("d",))], [Shortfall("cpu", 1, Fraction(12), Fraction(10), ("d",))]),
    # pods whose landing nodes are not known are left out
    ([(cores(100), ())], []),
    # largest need first
    ([(cores(1), ("c",)), (cores(5), ("b",)), (cores(20), ("d",))],
     [Shortfall("cpu", 1, Fraction(20), Fraction(10), ("d",)),
      Shortfall("cpu", 1, Fraction(5), Fraction(3, 2), ("b",)),
      Shortfall("cpu", 1, Fraction(1), Fraction(0), ("c",))]),
])
def test_shortfalls(moving, expected):
    assert shortfalls(moving, FREE) == expected


# -- edges the API rarely sends ---------------------------------------------------------------------
def test_an_exponent_multiplies_the_number():
    assert parse_quantity("2e3") == 2000 and parse_quantity("1.5E2") == 150


def test_a_resource_list_that_is_not_a_mapping_counts_as_none():
    assert resources._resources(["cpu", "1"]) == {} and resources._resources(None) == {}


def test_an_init_container_alone_sets_the_request():
    the_pod = {"spec": {"initContainers": [{"resources": {"requests": {"cpu": "500m"}}}],
                        "containers": [{"resources": {}}]}}
    assert pod_requests(the_pod) == {"cpu": Fraction(1, 2)}


def test_a_request_the_node_does_not_list_leaves_it_negative():
    nodes = [{"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "2"}}}]
    pods = [{"spec": {"nodeName": "n", "containers": [{"resources": {"requests": {"memory": "1Ki"}}}]}}]
    assert free_allocatable(nodes, pods) == {"n": {"cpu": Fraction(2), "memory": Fraction(-1024)}}
