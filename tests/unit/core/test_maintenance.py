"""core/maintenance.py: provider and controller taint keys are never the GPU taint (a usage error
as --gpu-taint, untouched on nodes), and the signs of someone else's maintenance, rule by rule.

Node and taint shapes from /work/shared/research/platforms.md §5.2 and §1.7."""

import pytest

from kubectl_gpuisolate import cli
from kubectl_gpuisolate.core import maintenance
from kubectl_gpuisolate.core.taints import (
    Taint,
    TaintRef,
    add_taint,
    gpu_taints_on,
    parse_taint,
    parse_taint_ref,
    remove_taint,
)
from kubectl_gpuisolate.errors import UsageError
from kubectl_gpuisolate.exits import EXIT_USAGE

from ..design_tables import code_names, design_tables
from ..factories import node

PROVIDER_TAINTS = [
    {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"},
    {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
    {"key": "eks.amazonaws.com/nodegroup", "value": "unschedulable", "effect": "NoSchedule"},
    {"key": "node.cluster.x-k8s.io/uninitialized", "effect": "NoSchedule"},
    {"key": "node.cluster.x-k8s.io/outdated-revision", "effect": "PreferNoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
    {"key": "ToBeDeletedByClusterAutoscaler", "value": "1733000000", "effect": "NoSchedule"},
    {"key": "DeletionCandidateOfClusterAutoscaler", "value": "1733000000", "effect": "PreferNoSchedule"},
]
OWNERS = ["Karpenter", "Karpenter", "EKS managed node groups", "Cluster API", "Cluster API",
          "Kubernetes (the node lifecycle controller and cordon)", "cluster-autoscaler",
          "cluster-autoscaler"]
GPU = Taint("nvidia.com/gpu", "true", "NoSchedule")


@pytest.mark.parametrize("taint, owner", list(zip(PROVIDER_TAINTS, OWNERS)),
                         ids=[t["key"] for t in PROVIDER_TAINTS])
def test_each_provider_key_has_its_owner(taint, owner):
    assert maintenance.provider_owner(taint["key"]) == owner


@pytest.mark.parametrize("key", ["nvidia.com/gpu", "sku", "dedicated", "karpenter.shx/a",
                                 "eks.amazonaws.com/compute-type", "node.kubernetes.iox/a",
                                 "tobedeletedbyclusterautoscaler"])
def test_keys_of_ones_own_have_no_owner(key):
    assert maintenance.provider_owner(key) is None


@pytest.mark.parametrize("spec, key, owner", [
    ("karpenter.sh/disrupted:NoSchedule", "karpenter.sh/disrupted", "Karpenter"),
    ("node.kubernetes.io/unschedulable=x:NoSchedule", "node.kubernetes.io/unschedulable",
     "Kubernetes (the node lifecycle controller and cordon)"),
    ("eks.amazonaws.com/nodegroup=unschedulable:NoSchedule", "eks.amazonaws.com/nodegroup",
     "EKS managed node groups"),
    ("ToBeDeletedByClusterAutoscaler:NoSchedule", "ToBeDeletedByClusterAutoscaler", "cluster-autoscaler"),
])
def test_a_provider_key_as_the_gpu_taint_is_a_one_line_usage_error(spec, key, owner):
    with pytest.raises(UsageError) as caught:
        parse_taint(spec)
    assert str(caught.value) == (f"invalid GPU taint {spec!r}: the key {key} belongs to {owner}, which "
                                 "sets and removes it itself; use a key of your own, e.g. nvidia.com/gpu")
    assert caught.value.exit_code == EXIT_USAGE


@pytest.mark.parametrize("spec", ["karpenter.sh/disrupted", "node.cluster.x-k8s.io/uninitialized:NoSchedule",
                                  "DeletionCandidateOfClusterAutoscaler-"])
def test_untaint_refuses_provider_keys_too(spec):
    with pytest.raises(UsageError, match="belongs to"):
        parse_taint_ref(spec)


@pytest.fixture
def no_cluster(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)


@pytest.mark.parametrize("argv", [
    ["taint", "--gpu-taint", "karpenter.sh/disrupted:NoSchedule"],
    ["untaint", "--gpu-taint", "karpenter.sh/disrupted"],
    ["status", "--gpu-taint", "node.kubernetes.io/unschedulable:NoSchedule"],
    ["evacuate", "--gpu-taint", "ToBeDeletedByClusterAutoscaler:NoSchedule"],
    ["taint", "--gpu-taint", "nvidia.com/gpu=true:NoWay"],
], ids=["taint", "untaint", "status", "evacuate", "unknown-effect"])
def test_the_commands_exit_2_with_one_line_before_any_connection(argv, no_cluster, capsys):
    code = cli.main(argv)
    captured = capsys.readouterr()
    assert code == EXIT_USAGE and captured.out == ""
    assert captured.err.startswith("error: invalid ") and captured.err.count("\n") == 1


@pytest.mark.parametrize("taint", PROVIDER_TAINTS, ids=[t["key"] for t in PROVIDER_TAINTS])
def test_provider_taints_never_count_as_the_gpu_taint_and_are_kept_by_add_and_remove(taint):
    assert gpu_taints_on([taint], GPU) == []
    added, _ = add_taint([taint], GPU, overwrite=False)
    assert added[0] == taint and len(added) == 2
    removed = remove_taint(added, TaintRef("nvidia.com/gpu", None))
    assert removed[0] == [taint]


# -- someone else's maintenance -------------------------------------------------------------------
def labelled(labels=None, taints=None):
    return node("n", labels=labels, taints=taints)


MAINTENANCE_CASES = [
    (labelled(taints=[PROVIDER_TAINTS[0]]), ["Karpenter is disrupting it (taint karpenter.sh/disrupted)"],
     "karpenter"),
    (labelled(taints=[PROVIDER_TAINTS[2]]),
     ["an EKS managed node group update is replacing it "
      "(taint eks.amazonaws.com/nodegroup=unschedulable:NoSchedule)"], "eks-mng-update"),
    (labelled(taints=[{"key": "eks.amazonaws.com/nodegroup", "value": "other", "effect": "NoSchedule"}]),
     [], "eks-other-value"),
    (labelled({"nvidia.com/gpu-driver-upgrade-state": "drain-required"}),
     ["the GPU Operator is upgrading its driver (nvidia.com/gpu-driver-upgrade-state=drain-required)"],
     "driver-upgrade"),
    (labelled({"nvidia.com/gpu-driver-upgrade-state": "upgrade-done"}), [], "driver-upgrade-done"),
    (labelled(taints=[PROVIDER_TAINTS[6]]),
     ["cluster-autoscaler is scaling it down (taint ToBeDeletedByClusterAutoscaler)"], "scale-down"),
    (labelled(taints=[PROVIDER_TAINTS[7]]), [], "scale-down-candidate-only"),
    (dict(labelled(), metadata={"name": "n", "deletionTimestamp": "2026-12-01T10:00:00Z"}),
     ["it is being deleted (deletionTimestamp 2026-12-01T10:00:00Z)"], "deleting"),
    (labelled(taints=[PROVIDER_TAINTS[5], PROVIDER_TAINTS[3]]), [], "cordoned-or-uninitialized"),
    (labelled({"nvidia.com/gpu-driver-upgrade-state": "cordon-required"}, [PROVIDER_TAINTS[0]]),
     ["Karpenter is disrupting it (taint karpenter.sh/disrupted)",
      "the GPU Operator is upgrading its driver (nvidia.com/gpu-driver-upgrade-state=cordon-required)"],
     "two-at-once"),
    (labelled(), [], "nobody"),
]


@pytest.mark.parametrize("the_node, expected", [c[:2] for c in MAINTENANCE_CASES],
                         ids=[c[2] for c in MAINTENANCE_CASES])
def test_who_else_is_draining_the_node(the_node, expected):
    assert maintenance.maintenance(the_node) == expected


def test_the_design_table_lists_the_maintenance_rules_in_order():
    owners, rules = design_tables("## Other owners of a GPU node")
    assert [code_names(row["rule"]) for row in rules] == \
        [[rule.__name__] for rule in maintenance.MAINTENANCE_RULES]
    keys = [k for row in owners for k in code_names(row["key"])]
    assert {k.rstrip("*") for k in keys} == (set(maintenance.PROVIDER_KEYS)
                                             | {p for p, _ in maintenance.PROVIDER_PREFIXES})
