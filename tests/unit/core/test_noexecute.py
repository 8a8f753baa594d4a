"""core/noexecute.py: which pods a NoExecute taint deletes, after how long, and why each matters."""

import pytest

from kubectl_gpuisolate.core.noexecute import (
    WHY_DAEMONSET,
    WHY_FINISHED,
    WHY_GPU,
    WHY_MIRROR,
    WHY_NO_CONTROLLER,
    WHY_PDB,
    Deletion,
    deletion_delay,
    deletions,
    fence_for,
)
from kubectl_gpuisolate.core.taints import Taint

from ..factories import DEFAULT_TOLERATIONS, GPU_TOLERATION, INFERENCE_TOLERATIONS, TOLERATE_ALL, owner, pod

NOEXEC = Taint("nvidia.com/gpu", "true", "NoExecute")
TOL_NOEXEC = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}
TOL_ANY_EFFECT = {"key": "nvidia.com/gpu", "operator": "Exists"}


def tol(seconds, **extra):
    return dict(TOL_NOEXEC, tolerationSeconds=seconds, **extra)


@pytest.mark.parametrize("tolerations, expected", [
    (None, 0),
    ([], 0),
    (DEFAULT_TOLERATIONS, 0),                       # NoExecute for other keys only
    (INFERENCE_TOLERATIONS, 0),                     # tolerates NoSchedule only
    ([GPU_TOLERATION], 0),
    ([TOL_NOEXEC], None),
    ([TOL_ANY_EFFECT], None),                       # an empty effect matches NoExecute
    (TOLERATE_ALL, None),
    ([dict(TOL_NOEXEC, operator="Equal", value="false")], 0),
    ([dict(TOL_NOEXEC, operator="Equal", value="true")], None),
    ([tol(300)], 300),
    ([tol(0)], 0),
    ([tol(-5)], 0),
    ([tol(300), tol(60)], 60),                      # the smallest wins
    ([TOL_NOEXEC, tol(120)], 120),                  # one without seconds does not outlast it
    ([tol(30), dict(DEFAULT_TOLERATIONS[0])], 30),  # non-matching seconds are ignored
], ids=["none", "empty", "defaults", "inference", "noschedule-only", "noexecute", "any-effect",
        "tolerate-all", "other-value", "same-value", "seconds", "zero", "negative", "min",
        "mixed", "other-key-seconds"])
def test_deletion_delay(tolerations, expected):
    assert deletion_delay(tolerations, NOEXEC) == expected


def ds_owner():
    return owner("DaemonSet", "nvidia-device-plugin")


PDB = {"metadata": {"name": "nai-db-pdb", "namespace": "nai"},
       "spec": {"selector": {"matchLabels": {"app": "db"}}}}
OTHER_NS_PDB = {"metadata": {"name": "db-pdb", "namespace": "default"},
                "spec": {"selector": {"matchLabels": {"app": "db"}}}}


@pytest.mark.parametrize("kwargs, why, pdbs", [
    ({}, (), ()),
    ({"owner_ref": None}, (WHY_NO_CONTROLLER,), ()),
    ({"owner_ref": ds_owner()}, (WHY_DAEMONSET,), ()),
    ({"owner_ref": None, "annotations": {"kubernetes.io/config.mirror": "x"}}, (WHY_MIRROR,), ()),
    ({"requests": {"nvidia.com/gpu": "1"}, "tolerations": INFERENCE_TOLERATIONS}, (WHY_GPU,), ()),
    ({"claims": ["gpu"]}, (WHY_GPU,), ()),
    ({"volumes": [{"name": "dev", "hostPath": {"path": "/dev/nvidia0"}}]}, (WHY_GPU,), ()),
    ({"annotations": {"cdi.k8s.io/gpu": "nvidia.com/gpu=0"}}, (WHY_GPU,), ()),
    ({"namespace": "nai", "labels": {"app": "db"}}, (WHY_PDB,), ("nai-db-pdb",)),
    ({"namespace": "nai", "labels": {"app": "db"}, "owner_ref": None},
     (WHY_PDB, WHY_NO_CONTROLLER), ("nai-db-pdb",)),
    ({"phase": "Succeeded"}, (WHY_FINISHED,), ()),
    ({"phase": "Failed"}, (WHY_FINISHED,), ()),
    ({"phase": "Pending"}, (), ()),
], ids=["plain", "bare", "daemonset", "mirror", "gpu-request", "gpu-claim", "gpu-device-mount",
        "gpu-cdi", "pdb", "pdb-bare",
        "succeeded", "failed", "pending"])
def test_deletions_say_why_each_pod_matters(kwargs, why, pdbs):
    namespace = kwargs.get("namespace", "default")
    found = deletions([pod("p", **kwargs)], NOEXEC, [PDB, OTHER_NS_PDB])
    assert found == [Deletion(namespace, "p", f"uid-{namespace}-p", 0, why, pdbs, str(NOEXEC))]
    assert found[0].ref == f"{namespace}/p"


@pytest.mark.parametrize("the_pod", [{"metadata": {}, "spec": {}}, {"spec": None}, {}],
                         ids=["empty-metadata", "no-metadata", "nothing"])
def test_metadata_the_api_always_sets_is_empty_when_missing(the_pod):
    """Never None: the report and the json document print these."""
    assert deletions([the_pod], NOEXEC) == [
        Deletion("", "", "", 0, (WHY_NO_CONTROLLER,), (), "nvidia.com/gpu=true:NoExecute")]


def test_a_pdb_without_a_name_is_named_empty():
    nameless = {"metadata": {"namespace": "nai"}, "spec": PDB["spec"]}
    (found,) = deletions([pod("p", namespace="nai", labels={"app": "db"})], NOEXEC, [nameless, PDB])
    assert (found.why, found.pdbs) == ((WHY_PDB,), ("", "nai-db-pdb"))


def test_deletions_leave_out_tolerating_and_terminating_pods_and_keep_the_order():
    pods = [pod("b"), pod("tolerates", tolerations=[TOL_NOEXEC]), pod("going", deleting=True),
            pod("a", tolerations=[tol(300)])]
    assert [(d.name, d.after) for d in deletions(pods, NOEXEC)] == [("b", 0), ("a", 300)]


@pytest.mark.parametrize("deletion, text", [
    (Deletion("nai", "nai-db-0", "u", 0, (WHY_PDB,), ("nai-db-pdb",), "k=v:NoExecute"),
     "nai/nai-db-0 (PDB-guarded (nai-db-pdb)): deleted at once; it does not tolerate k=v:NoExecute"),
    (Deletion("d", "p", "u", 300, (), (), "k:NoExecute"),
     "d/p: deleted after 300s (its tolerationSeconds); its toleration of k:NoExecute has "
     "tolerationSeconds"),
    (Deletion("d", "p", "u", 0, (WHY_GPU, WHY_NO_CONTROLLER), (), "k:NoExecute"),
     "d/p (GPU consumer; no controller: would not be recreated): deleted at once; it does not "
     "tolerate k:NoExecute"),
    (Deletion("nai", "nai-db-0", "u", 0, (WHY_PDB,), ("a-pdb", "b-pdb"), "k:NoExecute"),
     "nai/nai-db-0 (PDB-guarded (a-pdb, b-pdb)): deleted at once; it does not tolerate k:NoExecute"),
    (Deletion("d", "p", "u", 0, (WHY_DAEMONSET, WHY_MIRROR, WHY_FINISHED), (), "k=v:NoExecute"),
     "d/p (DaemonSet pod (the DaemonSet recreates it and it is deleted again); mirror pod of a static "
     "pod; finished pod: its logs go with it): deleted at once; it does not tolerate k=v:NoExecute"),
], ids=["pdb", "seconds", "two-reasons", "two-pdbs", "the-other-reasons"])
def test_describe(deletion, text):
    assert deletion.describe() == text


def test_fence_for_keeps_key_and_value():
    assert fence_for(NOEXEC) == Taint("nvidia.com/gpu", "true", "NoSchedule")
    assert fence_for(Taint("k", "", "NoExecute")) == Taint("k", "", "NoSchedule")
