"""Dynamic Resource Allocation for real (Kubernetes 1.34+, resource.k8s.io/v1; the 1.37 job runs it).

The test publishes ResourceSlices for the kwok nodes by hand, as a DRA driver would: NVIDIA GPUs
(driver gpu.nvidia.com, DeviceClass gpu.nvidia.com, the chart's selector) on both GPU nodes, and a
NIC (driver nic.example.com) on GPU A and every CPU worker.  Deployments ask for them through
ResourceClaimTemplates; the real controller-manager makes the claims and the real scheduler
allocates them and binds the pods.  Then the planner judges each pod by its allocated claim:
- the GPU-claim pod stays, with the same UID, though it does not tolerate the taint;
- the NIC-claim pod does not tolerate the taint and moves; its replacement gets a NIC elsewhere;
- an operator who may not read claims gets the conservative rule (kept) and one warning.
"""
import json

import pytest
from sandbox_helpers import CPU_WORKERS, GPU_A, GPU_B, wait_until
from test_least_privilege import binding, role, shipped_rules, without

pytestmark = pytest.mark.dra
DRA = "resource.k8s.io/v1"
GPU_DRIVER, NIC_DRIVER = "gpu.nvidia.com", "nic.example.com"
EVACUATE = ["evacuate", GPU_A, "--taint-first", "--delete-emptydir-data", "--timeout", "3m"]


def device_class(name, expression):
    return {"apiVersion": DRA, "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def resource_slice(node, driver, devices):
    return {"apiVersion": DRA, "kind": "ResourceSlice", "metadata": {"name": f"{node}-{driver}"},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


def gpus(node, count):
    return [{"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"},
                                                "productName": {"string": "NVIDIA L40S"},
                                                "uuid": {"string": f"GPU-{node[-5:]}-{i}"}},
             "capacity": {"memory": {"value": "46068Mi"}}} for i in range(count)]


def template(namespace, name, device_class_name):
    return {"apiVersion": DRA, "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "dev", "exactly": {"deviceClassName": device_class_name}}]}}}}


def deployment(namespace, name, claim_template):
    """One replica that prefers GPU A (as the seed's workloads were placed there) and does not
    tolerate the GPU taint; its device comes from the claim template."""
    labels = {"app": name}
    prefer_a = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
        "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [GPU_A]}]}}]}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels},
                "spec": {"affinity": {"nodeAffinity": prefer_a},
                         "resourceClaims": [{"name": "dev", "resourceClaimTemplateName": claim_template}],
                         "containers": [{"name": "main", "image": "registry.example/app:1",
                                         "resources": {"claims": [{"name": "dev"}]}}]}}}}


def apply(sandbox, *objects):
    sandbox.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                           "items": list(objects)}))


def running(sandbox, namespace, app):
    pods = [p for p in sandbox.pods("-n", namespace, "-l", f"app={app}")
            if not p["metadata"].get("deletionTimestamp") and p["status"].get("phase") == "Running"]
    return pods[0] if len(pods) == 1 else None


def claim_of(sandbox, pod):
    [status] = pod["status"]["resourceClaimStatuses"]
    return sandbox.get_json("resourceclaims", "-n", pod["metadata"]["namespace"], status["resourceClaimName"])


def drivers(claim):
    return {r["driver"] for r in claim["status"]["allocation"]["devices"]["results"]}


@pytest.fixture
def dra(sandbox, clean, namespace):
    """The DeviceClasses and slices, and the two Deployments running on GPU A with allocated claims."""
    if not sandbox.minor_at_least("1.34"):
        pytest.skip(f"DRA (resource.k8s.io/v1) needs Kubernetes 1.34+, this sandbox is {sandbox.minor}: "
                    "scripts/test runs this file in its 1.37 pass")
    classes = [device_class(GPU_DRIVER, f"device.driver == '{GPU_DRIVER}' && "
                                        f"device.attributes['{GPU_DRIVER}'].type == 'gpu'"),
               device_class(NIC_DRIVER, f"device.driver == '{NIC_DRIVER}'")]
    slices = [resource_slice(node, GPU_DRIVER, gpus(node, 2)) for node in (GPU_A, GPU_B)]
    slices += [resource_slice(n, NIC_DRIVER, [{"name": "nic-0", "attributes": {"type": {"string": "nic"}}}])
               for n in [GPU_A, *CPU_WORKERS]]
    apply(sandbox, *classes, *slices, template(namespace, "one-gpu", GPU_DRIVER),
          template(namespace, "one-nic", NIC_DRIVER),
          deployment(namespace, "dra-gpu", "one-gpu"), deployment(namespace, "dra-nic", "one-nic"))
    try:
        pods = {app: wait_until(f"{app} running with its claim",
                                lambda app=app: running(sandbox, namespace, app))
                for app in ("dra-gpu", "dra-nic")}
        assert {p["spec"]["nodeName"] for p in pods.values()} == {GPU_A}, \
            {a: p["spec"]["nodeName"] for a, p in pods.items()}
        assert drivers(claim_of(sandbox, pods["dra-gpu"])) == {GPU_DRIVER}
        assert drivers(claim_of(sandbox, pods["dra-nic"])) == {NIC_DRIVER}
        yield namespace, pods
    finally:
        for obj in classes + slices:
            sandbox.kubectl("delete", obj["kind"].lower(), obj["metadata"]["name"], "--ignore-not-found",
                            check=False)


def pod_docs(result):
    doc = json.loads(result.stdout)
    return doc, {p["name"]: p for n in doc["nodes"] for p in n["pods"]}


def test_status_judges_dra_pods_by_their_allocated_claims(gpuisolate, dra, sandbox):
    namespace, pods = dra
    result = gpuisolate("status", GPU_A, "-o", "json")
    assert result.returncode == 0, result.stderr
    doc, found = pod_docs(result)
    assert doc["serverVersion"] == sandbox.release()
    gpu_doc, nic_doc = (found[pods[app]["metadata"]["name"]] for app in ("dra-gpu", "dra-nic"))
    assert (gpu_doc["verdict"], gpu_doc["reason"]) == ("stay", "resource-claim")
    assert f"allocated from {GPU_DRIVER}" in gpu_doc["message"]
    assert "does not tolerate" in gpu_doc["warning"]       # a restart would strand it: said
    assert (nic_doc["verdict"], nic_doc["reason"]) == ("move", "not-tolerated")
    assert "ResourceClaim" not in result.stderr


def test_evacuate_keeps_the_gpu_claim_pod_and_moves_the_nic_claim_pod(gpuisolate, dra, sandbox):
    namespace, pods = dra
    gpu_uid, nic_uid = (pods[a]["metadata"]["uid"] for a in ("dra-gpu", "dra-nic"))
    result = gpuisolate(*EVACUATE, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert running(sandbox, namespace, "dra-gpu")["metadata"]["uid"] == gpu_uid      # never evicted
    assert running(sandbox, namespace, "dra-gpu")["spec"]["nodeName"] == GPU_A
    moved = wait_until("the NIC pod's replacement to run with a NIC elsewhere",
                       lambda: running(sandbox, namespace, "dra-nic"))
    assert moved["metadata"]["uid"] != nic_uid and moved["spec"]["nodeName"] in CPU_WORKERS
    assert drivers(claim_of(sandbox, moved)) == {NIC_DRIVER}
    assert nic_uid not in {p["metadata"]["uid"] for p in sandbox.pods("-A")}


def test_without_get_resourceclaims_claim_pods_are_kept_with_one_warning(gpuisolate, dra, rbac, sandbox):
    namespace, pods = dra
    user = "gpuisolate-e2e-without-resourceclaims"
    rules = [x for r in shipped_rules() for x in without(r, "get", "resource.k8s.io", "resourceclaims")]
    rbac(role(user, [r for r in rules if r["verbs"]]), binding(user, user, "User", user))
    wait_until("the binding to take effect", lambda: sandbox.kubectl(
        "auth", "can-i", "list", "nodes", "--as", user, check=False).stdout.strip() == "yes")
    result = gpuisolate("--context", "sandbox-admin", "--as", user, "status", GPU_A, "-o", "json")
    assert result.returncode == 0, result.stderr
    _, found = pod_docs(result)
    nic_doc = found[pods["dra-nic"]["metadata"]["name"]]
    assert (nic_doc["verdict"], nic_doc["reason"]) == ("stay", "resource-claim")   # the conservative rule
    assert "claims not readable" in nic_doc["message"]
    warnings = [line for line in result.stderr.splitlines() if "ResourceClaims" in line]
    assert len(warnings) == 1, result.stderr
    assert 'cannot get resource "resourceclaims" in API group "resource.k8s.io"' in warnings[0]
    assert "every pod with claims is kept as a GPU pod" in warnings[0]
