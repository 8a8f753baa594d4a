"""kube/api.py: the Eviction as sent (its preconditions, UID always and resourceVersion when
planned; its grace period; its dry runs), and what a listed node keeps."""

import pytest

from kubectl_gpuisolate.core.dryrun import DryRun
from kubectl_gpuisolate.kube.api import Kube
from kubectl_gpuisolate.kube.transport import Transport


class Recorder:
    def __init__(self):
        self.sent = []

    def request(self, method, path, **kw):
        self.sent.append((method, path, kw))


@pytest.mark.parametrize("version, grace, dry_run, options, params", [
    ("", -1, DryRun.NONE, {"preconditions": {"uid": "u1"}}, None),
    ("17", -1, DryRun.NONE, {"preconditions": {"uid": "u1", "resourceVersion": "17"}}, None),
    (None, 0, DryRun.NONE, {"preconditions": {"uid": "u1"}, "gracePeriodSeconds": 0}, None),
    ("17", -1, DryRun.SERVER, {"preconditions": {"uid": "u1", "resourceVersion": "17"},
                               "dryRun": ["All"]}, {"dryRun": "All"}),
])
def test_the_eviction_sent(version, grace, dry_run, options, params):
    transport = Recorder()
    Kube(transport).evict("ns", "p", "u1", grace_period=grace, dry_run=dry_run, resource_version=version)
    [(method, path, kw)] = transport.sent
    assert (method, path) == ("POST", "/api/v1/namespaces/ns/pods/p/eviction")
    assert kw["body"] == {"apiVersion": "policy/v1", "kind": "Eviction",
                          "metadata": {"name": "p", "namespace": "ns"}, "deleteOptions": options}
    assert kw["params"] == params and kw["retry"] is False


def test_a_client_dry_run_sends_nothing():
    transport = Recorder()
    Kube(transport).evict("ns", "p", "u1", grace_period=-1, dry_run=DryRun.CLIENT, resource_version="1")
    assert transport.sent == []


def test_a_listed_node_keeps_what_the_commands_read_and_drops_the_rest():
    from kubectl_gpuisolate.kube.essentials import node as node_essentials

    node = {"metadata": {"name": "gpu-1", "labels": {"a": "1"}, "annotations": {"b": "2"},
                         "resourceVersion": "9", "managedFields": [{"manager": "kubelet"}]},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}], "unschedulable": True},
            "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"cpu": "4"},
                       "conditions": [{"type": "Ready"}], "images": [{"names": ["x"]}],
                       "nodeInfo": {"kubeletVersion": "v1.33.5"}, "addresses": []}}
    assert node_essentials(node) == {
        "metadata": {"name": "gpu-1", "labels": {"a": "1"}, "annotations": {"b": "2"},
                     "resourceVersion": "9"},
        "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}], "unschedulable": True},
        "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"cpu": "4"}}}
    assert node_essentials({"metadata": {"name": "n"}}) == {"metadata": {"name": "n"}}


def test_listed_nodes_of_a_pool_share_their_repeated_parts():
    from kubectl_gpuisolate.kube.essentials import Shared
    from kubectl_gpuisolate.kube.essentials import node as node_essentials

    def listed(name):      # each as its own decoded object, as pages arrive
        value = "".join(["g", "pu"])    # a new string each time, as the decoder makes
        return {"metadata": {"name": name, "labels": {"pool": value, "host": name}},
                "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
                "status": {"capacity": {"nvidia.com/gpu": "8"}, "conditions": [{"type": "Ready"}]}}

    share = Shared()
    first, second = (node_essentials(listed(name), share) for name in ("gpu-1", "gpu-2"))
    assert first == node_essentials(listed("gpu-1"))
    assert first["spec"] is second["spec"]
    assert first["status"]["capacity"] is second["status"]["capacity"]
    assert first["metadata"]["labels"]["pool"] is second["metadata"]["labels"]["pool"]
    assert second["metadata"]["labels"] == {"pool": "gpu", "host": "gpu-2"}


class Pages:
    """A transport whose lists come in pages of ``size`` (limit/continue), recording each GET."""

    def __init__(self, items, size):
        self.items, self.size, self.gets = items, size, []

    def get(self, path, params=None, *, what):
        self.gets.append(dict(params))
        start = int(params.get("continue") or 0)
        limit = min(params["limit"], self.size)
        more = start + limit < len(self.items)
        return {"items": self.items[start:start + limit],
                "metadata": {"resourceVersion": "9", **({"continue": str(start + limit)} if more else {})}}

    list_all = Transport.list_all


def daemonset(name, namespace="kube-system"):
    return {"metadata": {"name": name, "namespace": namespace}}


def test_a_bounded_list_is_one_page_and_none_when_there_are_more():
    pages = Pages([daemonset("a"), daemonset("b"), daemonset("c", "gpu")], size=500)
    assert Kube(pages).list_daemonset_keys(3) == {("kube-system", "a"), ("kube-system", "b"), ("gpu", "c")}
    assert pages.gets == [{"limit": 3}]
    pages.gets.clear()
    assert Kube(pages).list_daemonset_keys(2) is None and pages.gets == [{"limit": 2}]


def test_template_pins_bounded_and_not():
    pinned = {"metadata": {"name": "p", "namespace": "n"},
              "spec": {"template": {"spec": {"nodeName": "gpu-1"}}}}
    pages = Pages([daemonset("a", "n"), pinned, daemonset("b", "n")], size=2)
    assert Kube(pages).list_template_pins("ReplicaSet") == {("n", "p"): "gpu-1"}
    assert pages.gets == [{"limit": 500}, {"limit": 500, "continue": "2"}]
    assert Kube(pages).list_template_pins("ReplicaSet", 2) is None
    assert Kube(pages).list_template_pins("ReplicaSet", 3) is None      # the server's pages are of 2
