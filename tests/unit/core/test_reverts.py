"""core/reverts.py: who took a taint off again, read from the node's managedFields, and the
one line ``taint`` stops with."""

from kubectl_gpuisolate.core import reverts

OWN = "kubectl-gpuisolate"
TAINTS = {"f:spec": {"f:taints": {}}}
CAPI = {"cluster.x-k8s.io/machine": "gpu-1-abc", "cluster.x-k8s.io/owner-kind": "MachineSet",
        "cluster.x-k8s.io/owner-name": "gpupool-1-z9mz6-pl9k2"}


def entry(manager, time, fields, subresource=None):
    out = {"manager": manager, "operation": "Update", "time": time, "fieldsV1": fields}
    if subresource:
        out["subresource"] = subresource
    return out


def node(*entries, annotations=None):
    return {"metadata": {"name": "gpu-1", "managedFields": list(entries),
                         "annotations": dict(annotations or {})}}


def test_the_owner_of_the_taints_list_comes_first_even_if_another_spec_writer_is_newer():
    found = node(entry("capi-controller", "2026-12-01T10:00:00Z", TAINTS),
                 entry("kube-controller-manager", "2026-12-01T10:00:05Z", {"f:spec": {"f:podCIDR": {}}}))
    assert reverts.taint_writers(found, OWN) == ["capi-controller", "kube-controller-manager"]


def test_among_spec_writers_the_newest_comes_first_and_one_without_a_time_last():
    found = node(entry("z", "2026-12-01T10:00:00Z", {"f:spec": {}}),
                 entry("untimed", None, {"f:spec": {}}),
                 entry("a", "2026-12-01T10:00:09Z", {"f:spec": {}}))
    assert reverts.taint_writers(found, OWN) == ["a", "z", "untimed"]


def test_writers_after_our_own_entry_are_still_found():
    found = node(entry(OWN, "2026-12-01T10:00:09Z", {"f:spec": {"f:podCIDR": {}}}),
                 entry("taint-sync", "2026-12-01T10:00:01Z", TAINTS))
    assert reverts.taint_writers(found, OWN) == ["taint-sync"]


def test_our_own_writes_status_writers_and_metadata_writers_are_not_removers():
    found = node(entry(OWN, "2026-12-01T10:00:09Z", TAINTS),
                 entry("kubelet", "2026-12-01T10:00:09Z", {"f:status": {}}, subresource="status"),
                 entry("kubectl-label", "2026-12-01T10:00:09Z", {"f:metadata": {"f:labels": {}}}),
                 entry("", "2026-12-01T10:00:09Z", TAINTS))
    assert reverts.taint_writers(found, OWN) == []


def test_a_manager_is_named_once():
    found = node(entry("x", "2026-12-01T10:00:00Z", TAINTS),
                 entry("x", "2026-12-01T10:00:01Z", {"f:spec": {}}, subresource=None))
    assert reverts.taint_writers(found, OWN) == ["x"]


def test_the_message_names_the_remover_and_where_a_cluster_api_pool_takes_its_taints_from():
    found = node(entry("taint-propagation", "2026-12-01T10:00:00Z", TAINTS), annotations=CAPI)
    text = reverts.reverted_message(found, "nvidia.com/gpu=true:NoSchedule", 3, OWN)
    assert text.startswith("node gpu-1: nvidia.com/gpu=true:NoSchedule was removed again after "
                           "each of 3 writes: field manager 'taint-propagation' (the node's "
                           "managedFields) removes it; the node belongs to Cluster API "
                           "MachineDeployment gpupool-1-z9mz6: set the taint in the bootstrap "
                           "template of MachineDeployment gpupool-1-z9mz6")
    assert text.endswith("; not writing it again")
    assert "\n" not in text


def test_the_message_never_names_our_own_writes():
    found = node(entry(OWN, "2026-12-01T10:00:09Z", TAINTS),
                 entry("taint-sync", "2026-12-01T10:00:00Z", {"f:spec": {}}))
    assert "field manager 'taint-sync'" in reverts.reverted_message(found, "k:NoSchedule", 3, OWN)


def test_the_message_says_when_the_node_names_no_remover_and_no_manager():
    text = reverts.reverted_message(node(), "k=v:NoSchedule", 2, OWN, also=["gpu-2", "gpu-3"])
    assert text == ("node gpu-1 (and on 2 more node(s): gpu-2, gpu-3): k=v:NoSchedule was removed "
                    "again after each of 2 writes: the node's managedFields do not name the writer "
                    "that removes it; stop that controller or set the taint where it takes its "
                    "taints from; not writing it again")
