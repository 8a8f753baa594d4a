"""The KubeApi Protocol is what the rest of the package may call: the real Kube and every
test fake must offer each of its calls with the same signature, so fakes cannot drift."""

import inspect

import pytest

from kubectl_gpuisolate.kube import Kube, KubeApi

from ..evict_fakes import FakeCluster, FakeNode

CALLS = sorted(name for name, member in vars(KubeApi).items()
               if callable(member) and not name.startswith("_"))


def test_the_protocol_lists_the_calls():
    assert {"evict", "update_node_taints", "list_pods_on_node", "watch_pods_on_node"} <= set(CALLS)


@pytest.mark.parametrize("name", CALLS)
def test_kube_implements_each_call_with_the_protocols_signature(name):
    assert params(getattr(Kube, name)) == params(getattr(KubeApi, name))


@pytest.mark.parametrize("fake", [FakeCluster, FakeNode], ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", CALLS)
def test_fakes_match_the_protocol_where_they_implement_a_call(fake, name):
    """A fake may leave out calls its tests never make, but what it has must match."""
    if not hasattr(fake, name):
        return
    assert params(getattr(fake, name)) == params(getattr(KubeApi, name)), f"{fake.__name__}.{name}"


@pytest.mark.parametrize("fake", [FakeCluster, FakeNode], ids=lambda f: f.__name__)
def test_fakes_have_no_calls_the_protocol_lacks(fake):
    extra = {n for n, m in vars(fake).items() if callable(m) and not n.startswith("_")} - set(CALLS)
    assert not extra - ALLOWED_HELPERS.get(fake.__name__, set()), f"{fake.__name__}: {sorted(extra)}"


def params(function):
    """(name, kind, default) of each parameter but self: annotations are documentation."""
    return [(p.name, p.kind, p.default) for p in
            list(inspect.signature(function).parameters.values())[1:]]


# Test-side helpers of the fakes (scripting and inspection), not API calls.
ALLOWED_HELPERS = {"FakeCluster": {"evicted"}, "FakeNode": set()}
