"""core/claims.py and the planner's resource_claim rule: a DRA claim keeps a pod only when it
holds (or asks only for) a GPU, or cannot be judged; gather reads the claims once, and what
it cannot read falls back to the conservative rule with one warning."""

import pytest

from kubectl_gpuisolate.core import claims
from kubectl_gpuisolate.core.planner import MOVE, STAY, PlanOptions, decide
from kubectl_gpuisolate.core.taints import Taint
from kubectl_gpuisolate.errors import api_error
from kubectl_gpuisolate.kube import gather

from ..evict_fakes import FakeCluster
from ..factories import GPU_A, GPU_TAINT, INFERENCE_TOLERATIONS, gpu_node, pod

OPTIONS = PlanOptions(Taint("nvidia.com/gpu", "true", "NoSchedule"))


def allocated(*drivers, name="c"):
    results = [{"request": "r", "driver": d, "pool": GPU_A, "device": f"dev-{i}"}
               for i, d in enumerate(drivers)]
    return {"metadata": {"name": name}, "spec": {"devices": {"requests": [{"name": "r"}]}},
            "status": {"allocation": {"devices": {"results": results}}}}


def pending(*classes, v1beta1=False):
    if v1beta1:
        requests = [{"name": f"r{i}", "deviceClassName": c} for i, c in enumerate(classes)]
    else:
        requests = [{"name": f"r{i}", "exactly": {"deviceClassName": c}} for i, c in enumerate(classes)]
    return {"spec": {"devices": {"requests": requests}}}


@pytest.mark.parametrize("claim,kind,what", [
    (allocated("gpu.nvidia.com"), claims.GPU, "allocated from gpu.nvidia.com"),
    (allocated("gpu.amd.com"), claims.GPU, "allocated from gpu.amd.com"),
    (allocated("gpu.intel.com"), claims.GPU, "allocated from gpu.intel.com"),
    (allocated("sriovnetwork.k8s.io"), claims.OTHER, "allocated from sriovnetwork.k8s.io"),
    (allocated("sriovnetwork.k8s.io", "gpu.nvidia.com"), claims.GPU,
     "allocated from gpu.nvidia.com, sriovnetwork.k8s.io"),
    (allocated("compute-domain.nvidia.com"), claims.OTHER, "allocated from compute-domain.nvidia.com"),
    (pending("gpu.nvidia.com"), claims.GPU, "asks for gpu.nvidia.com"),
    (pending("mig.nvidia.com"), claims.GPU, "asks for mig.nvidia.com"),
    (pending("mig.nvidia.com", "gpu.nvidia.com"), claims.GPU, "asks for gpu.nvidia.com, mig.nvidia.com"),
    (pending("mig-1g-12gb.gpu.nvidia.com"), claims.GPU, "asks for mig-1g-12gb.gpu.nvidia.com"),
    (pending("gpu.nvidia.com", v1beta1=True), claims.GPU, "asks for gpu.nvidia.com"),
    (pending("nic.example.com"), claims.UNKNOWN, "not allocated; asks for nic.example.com"),
    (pending("gpu.nvidia.com", "nic.example.com"), claims.UNKNOWN,
     "not allocated; asks for gpu.nvidia.com, nic.example.com"),
    ({"spec": {"devices": {"requests": [{"name": "r", "firstAvailable": [
        {"name": "a", "deviceClassName": "gpu.nvidia.com"}]}]}}}, claims.GPU, "asks for gpu.nvidia.com"),
    ({}, claims.UNKNOWN, "not allocated"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_a_claim_is_judged_by_what_it_holds(claim, kind, what):
    assert claims.judge_claim(claim) == (kind, what)


def test_claim_names_come_from_the_spec_or_the_generated_status():
    p = {"spec": {"resourceClaims": [{"name": "shared", "resourceClaimName": "team-gpu"},
                                     {"name": "tpl", "resourceClaimTemplateName": "one-gpu"},
                                     {"name": "later", "resourceClaimTemplateName": "one-nic"}]},
         "status": {"resourceClaimStatuses": [{"name": "tpl", "resourceClaimName": "web-tpl-x7k"},
                                              {"name": "later"}]}}
    assert claims.claim_names(p) == [("shared", "team-gpu"), ("tpl", "web-tpl-x7k"), ("later", "")]


def dra_pod(name, claim, **kw):
    p = pod(name, "ml", **kw)
    p["spec"]["resourceClaims"] = [{"name": "dev", "resourceClaimTemplateName": "t"}]
    p["status"]["resourceClaimStatuses"] = [{"name": "dev", "resourceClaimName": claim}]
    return p


@pytest.mark.parametrize("held,action,reason,words", [
    (allocated("gpu.nvidia.com"), STAY, "resource-claim",
     "uses GPU resource claim c1 (allocated from gpu.nvidia.com)"),
    (allocated("sriovnetwork.k8s.io"), MOVE, "not-tolerated", "does not tolerate nvidia.com/gpu"),
    (None, STAY, "resource-claim", "uses resource claims c1 (claim not found: kept as GPU claims)"),
    (pending("nic.example.com"), STAY, "resource-claim",
     "(not allocated; asks for nic.example.com: kept as GPU claims)"),
])
def test_the_planner_keeps_only_gpu_claims_and_claims_it_cannot_judge(held, action, reason, words):
    p = dra_pod("w", "c1")
    found = {("ml", "c1"): held}
    d = decide(p, [GPU_TAINT], [], OPTIONS, resource_claims=found)
    assert (d.action, d.reason) == (action, reason)
    assert words in d.message


def test_a_tolerating_nic_claim_pod_is_an_isolation_leak():
    p = dra_pod("w", "c1", tolerations=INFERENCE_TOLERATIONS)
    d = decide(p, [GPU_TAINT], [], OPTIONS, resource_claims={("ml", "c1"): allocated("sriovnetwork.k8s.io")})
    assert (d.action, d.reason) == (STAY, "tolerates-without-gpu")     # a NIC is not a GPU


def test_gather_reads_each_claim_once_and_judges_by_it():
    gpu_pod, nic_pod = dra_pod("gpu-0", "g"), dra_pod("nic-0", "n")
    also = dra_pod("gpu-1", "g")          # a shared claim is read once
    cluster = FakeCluster([gpu_node(GPU_A)], [gpu_pod, nic_pod, also],
                          resource_claims={("ml", "g"): allocated("gpu.nvidia.com"),
                                           ("ml", "n"): allocated("sriovnetwork.k8s.io")})
    read = []
    original = cluster.get_resource_claim
    cluster.get_resource_claim = lambda ns, name: read.append((ns, name)) or original(ns, name)
    warnings = []
    [plan] = gather.build_plans(cluster, [gpu_node(GPU_A)], OPTIONS, warn=warnings.append)
    verdicts = {d.name: (d.action, d.reason) for d in plan.decisions}
    assert verdicts == {"gpu-0": (STAY, "resource-claim"), "gpu-1": (STAY, "resource-claim"),
                        "nic-0": (MOVE, "not-tolerated")}
    assert sorted(read) == [("ml", "g"), ("ml", "n")] and warnings == []


def test_gather_reads_no_claim_when_no_pod_has_one():
    cluster = FakeCluster([gpu_node(GPU_A)], [pod("web", "apps")],
                          claims_error=AssertionError("no claim should be read"))
    [plan] = gather.build_plans(cluster, [gpu_node(GPU_A)], OPTIONS)
    assert [d.action for d in plan.decisions] == [MOVE]


def test_claims_that_cannot_be_read_keep_every_claim_pod_with_one_warning():
    forbidden = api_error('resourceclaims.resource.k8s.io "n" is forbidden', status=403)
    cluster = FakeCluster([gpu_node(GPU_A)], [dra_pod("nic-0", "n"), dra_pod("nic-1", "m")],
                          claims_error=forbidden)
    warnings = []
    [plan] = gather.build_plans(cluster, [gpu_node(GPU_A)], OPTIONS, warn=warnings.append)
    assert {(d.action, d.reason) for d in plan.decisions} == {(STAY, "resource-claim")}
    assert all("claims not readable" in d.message for d in plan.decisions)
    assert len(warnings) == 1 and "cannot read the pods' ResourceClaims" in warnings[0]
    assert "forbidden" in warnings[0]


def test_the_dra_version_is_the_newest_served():
    from kubectl_gpuisolate.core.server_versions import dra_api_version
    assert dra_api_version(["v1beta1", "v1beta2", "v1"]) == "v1"
    assert dra_api_version(["v1beta1", "v1beta2"]) == "v1beta2"
    assert dra_api_version(["v1beta1"]) == "v1beta1"
    assert dra_api_version(["v1alpha3"]) is None
    assert dra_api_version([]) is None


def test_judge_names_each_claim_and_why_it_cannot_be_judged():
    p = {"metadata": {"namespace": "ml"},
         "spec": {"resourceClaims": [{"name": "tpl", "resourceClaimTemplateName": "one-gpu"},
                                     {"name": "own", "resourceClaimName": "team-nic"},
                                     {"name": "gone", "resourceClaimName": "lost"}]}}
    found = {("ml", "team-nic"): allocated("sriovnetwork.k8s.io")}
    assert claims.judge(p, found) == [
        claims.ClaimVerdict("tpl", "", claims.UNKNOWN, "claim not generated yet"),
        claims.ClaimVerdict("own", "team-nic", claims.OTHER, "allocated from sriovnetwork.k8s.io"),
        claims.ClaimVerdict("gone", "lost", claims.UNKNOWN, "claim not found")]
    assert [str(v) for v in claims.judge(p, None)] == [
        "tpl (claims not readable)", "team-nic (claims not readable)", "lost (claims not readable)"]
    assert claims.judge({"spec": {}}, found) == []


def test_wanted_lists_each_generated_claim_once_in_order():
    a, b = dra_pod("a", "x2"), dra_pod("b", "x1")
    c = dra_pod("c", "x2")                                   # shares a's claim
    d = pod("d", "other")
    d["spec"]["resourceClaims"] = [{"name": "dev", "resourceClaimTemplateName": "t"}]   # not generated
    assert claims.wanted([a, b, c, d]) == [("ml", "x1"), ("ml", "x2")]
    assert claims.wanted([d, pod("e", "ml")]) == []


def test_a_pod_without_a_namespace_or_entry_names_is_read_as_empty_strings():
    p = {"metadata": {}, "spec": {"resourceClaims": [{"resourceClaimName": "c1"}, {"name": "t"}]},
         "status": {"resourceClaimStatuses": [{"name": "t", "resourceClaimName": "t-abc"}]}}
    assert claims.claim_names(p) == [("", "c1"), ("t", "t-abc")]
    assert claims.wanted([p]) == [("", "c1"), ("", "t-abc")]
    found = {("", "c1"): allocated("gpu.nvidia.com")}
    assert claims.judge(p, found) == [
        claims.ClaimVerdict("", "c1", claims.GPU, "allocated from gpu.nvidia.com"),
        claims.ClaimVerdict("t", "t-abc", claims.UNKNOWN, "claim not found")]
