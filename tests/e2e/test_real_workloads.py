"""Workloads as real charts and operators run them, on the seed sandbox (1.33, and in the window
subset): GPU users that ask for no GPU (core/hidden_gpu.py) stay, warned, and `evacuate` keeps
every one of them by UID while it moves a plain pod beside them; pods the taint lets in that use
no GPU stay too, as isolation leaks that `status --strict` exits 1 for.

The pod specs follow public manifests, cut to what the planner reads (repository, path, tag; read
at that tag):
- RuntimeClass `nvidia` (handler `nvidia`) and a pod naming it without a GPU request:
  NVIDIA/k8s-device-plugin, README.md (lines 104-113), v0.20.0; the GPU Operator writes the same
  (NVIDIA/gpu-operator v26.7.0, with `nvidia-cdi` and `nvidia-legacy` beside it);
- `NVIDIA_VISIBLE_DEVICES=all` (and NVIDIA_DRIVER_CAPABILITIES=compute,utility) in a container's env
  with no GPU request: NVIDIA/k8s-device-plugin,
  deployments/helm/nvidia-device-plugin/templates/daemonset-device-plugin.yml (lines 202-205, and
  values.yaml `resources: {}`), v0.20.0; dcgm-exporter bakes the same into its image
  (NVIDIA/dcgm-exporter, docker/Dockerfile, 4.5.3-4.8.2);
- `cdi.k8s.io/<name>` annotations: cncf-tags/container-device-interface, pkg/cdi/annotations.go
  (`AnnotationPrefix = "cdi.k8s.io/"`; the value a comma-separated list of device names), v1.1.0;
  the spec's SPEC.md does not name the prefix;
- a hostPath of `/dev/nvidia0`: node agents' and hand-written pods' direct device mounts (no
  upstream example: the shape the device-node table in core/hidden_gpu.py names).
"""
import json

import pytest
import yaml
from sandbox_helpers import GPU_A, wait_until
from test_least_privilege import ROLE_FILE, binding, can_i, role, without

RUNTIME_CLASS = "e2e-nvidia"
pytestmark = pytest.mark.window


PREFER_GPU_A = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
    "weight": 100, "preference": {"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": [GPU_A]}]}}]}}


def deployment(namespace, name, spec_extra=None, container_extra=None, annotations=None):
    container = {"name": name, "image": "nvcr.io/nvidia/tritonserver:24.08-py3",
                 "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}, **(container_extra or {})}
    template_meta = {"labels": {"app": name}, **({"annotations": annotations} if annotations else {})}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": template_meta,
                                  "spec": {"nodeSelector": {"kubernetes.io/hostname": GPU_A},
                                           "containers": [container], **(spec_extra or {})}}}}


def workloads(namespace):
    """{name: (Deployment, the reason status gives its pod)}."""
    env = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
           {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}]
    from_configmap = [{"name": "NVIDIA_VISIBLE_DEVICES",
                       "valueFrom": {"configMapKeyRef": {"name": "gpu-config", "key": "devices"}}}]
    device = {"volumes": [{"name": "dev-nvidia0", "hostPath": {"path": "/dev/nvidia0"}}]}
    found = {
        "triton-runtime": (deployment(namespace, "triton-runtime", {"runtimeClassName": RUNTIME_CLASS}),
                           "gpu-runtime"),
        "exporter-env": (deployment(namespace, "exporter-env", container_extra={"env": env}), "gpu-env"),
        "chart-env-from": (deployment(namespace, "chart-env-from", container_extra={"env": from_configmap}),
                           "gpu-env"),
        "cdi-user": (deployment(namespace, "cdi-user", annotations={"cdi.k8s.io/gpu": "nvidia.com/gpu=all"}),
                     "gpu-cdi"),
        "device-mount": (deployment(namespace, "device-mount", device), "gpu-device-mount"),
        # Isolation leaks: no GPU in any form, yet let in by the taint (a chart's tolerate-all; a
        # GPU pod's toleration copied into a CPU Deployment). They stay, warned.
        "tolerate-all": (deployment(namespace, "tolerate-all", {"tolerations": [{"operator": "Exists"}]}),
                         "tolerates-everything"),
        "copied-toleration": (deployment(namespace, "copied-toleration", {"tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}),
            "tolerates-without-gpu"),
        # Beside them, a pod that merely says NVIDIA_VISIBLE_DEVICES=void: it uses no GPU, and moves.
        "plain": (deployment(namespace, "plain", container_extra={"env": [
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]}), "not-tolerated"),
    }
    # The plain one only prefers the GPU node, so that its replacement may land elsewhere.
    plain = found["plain"][0]["spec"]["template"]["spec"]
    del plain["nodeSelector"]
    plain["affinity"] = PREFER_GPU_A
    return found


@pytest.fixture
def hidden_users(clean, namespace):
    clean.apply({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                 "metadata": {"name": RUNTIME_CLASS}, "handler": "nvidia"},
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "gpu-config", "namespace": namespace}, "data": {"devices": "all"}})
    shapes = workloads(namespace)
    clean.apply(*[d for d, _ in shapes.values()])

    def running():
        pods = clean.pods("-n", namespace)
        return len([p for p in pods if p["status"].get("phase") == "Running"
                    and p["spec"].get("nodeName") == GPU_A]) == len(shapes) and pods
    pods = wait_until("the workloads to run on the GPU node", running, timeout=120)
    yield namespace, {p["metadata"]["labels"]["app"]: p for p in pods}, shapes, clean
    clean.kubectl("delete", "runtimeclass", RUNTIME_CLASS, "--ignore-not-found")


def verdicts(result, namespace):
    document = json.loads(result.stdout)
    return {p["name"].rsplit("-", 2)[0]: (p["verdict"], p["reason"])
            for node in document["nodes"] for p in node["pods"] if p["namespace"] == namespace}


def test_gpu_users_without_a_request_stay_warned_and_evacuate_keeps_their_uids(gpuisolate, hidden_users):
    namespace, pods, shapes, _ = hidden_users
    status = gpuisolate("status", GPU_A, "-o", "json", "--all-pods")
    assert status.returncode == 0, status.stderr
    got = verdicts(status, namespace)
    assert got == {name: ("move" if reason == "not-tolerated" else "stay", reason)
                   for name, (_, reason) in shapes.items()}, got
    warned = [w for w in json.loads(status.stdout)["warnings"] if f" {namespace}/" in w]
    hidden = [w for w in warned if "bypassing the device plugin's accounting" in w]
    assert len(hidden) == 5 and any("comes from configMapKeyRef, which is not read" in w for w in hidden)
    leaks = sorted(w for w in warned if w.startswith("isolation leak: "))
    assert len(leaks) == 2 and len(warned) == 7, warned
    assert leaks[0].endswith("remove the toleration nvidia.com/gpu:NoSchedule (Exists) from "
                             "Deployment/copied-toleration")
    assert leaks[1].endswith("remove the toleration {operator: Exists} from Deployment/tolerate-all")

    result = gpuisolate("evacuate", GPU_A, "--taint-first", "--delete-emptydir-data", "--timeout", "3m")
    assert result.returncode == 0, result.stderr
    after = {p["metadata"]["labels"]["app"]: p for p in clean_pods(hidden_users)}
    for name, (_, reason) in shapes.items():
        if reason != "not-tolerated":
            assert after[name]["metadata"]["uid"] == pods[name]["metadata"]["uid"], name
    assert "plain" not in after or after["plain"]["metadata"]["uid"] != pods["plain"]["metadata"]["uid"]
    assert "evicting pod " + f"{namespace}/" + pods["plain"]["metadata"]["name"] in result.stderr
    # The node is clean for --exit-code (docs/output.md: 0); --strict still finds the two leaks (1).
    assert gpuisolate("status", GPU_A, "--exit-code").returncode == 0
    strict = gpuisolate("status", GPU_A, "--strict")
    assert strict.returncode == 1 and "; 2 isolation leaks\n" in strict.stdout, strict.stdout


def clean_pods(hidden_users):
    namespace, _, _, sandbox = hidden_users
    return [p for p in sandbox.pods("-n", namespace) if not p["metadata"].get("deletionTimestamp")]


def test_without_list_runtimeclasses_a_class_is_judged_by_its_name(gpuisolate, hidden_users, rbac):
    """The shipped role less `list runtimeclasses`: one warning, and the pod naming the
    `e2e-nvidia` class is still kept as a GPU user (its name holds 'nvidia')."""
    namespace, _, _, sandbox = hidden_users
    user = "gpuisolate-e2e-without-list-runtimeclasses"
    rules = [x for r in yaml.safe_load(ROLE_FILE.read_text())["rules"]
             for x in without(r, "list", "node.k8s.io", "runtimeclasses")]
    rbac(role(user, [r for r in rules if r["verbs"]]), binding(user, user, "User", user))
    wait_until("the binding to take effect", lambda: can_i(sandbox, "list", "nodes", "--as", user))
    result = gpuisolate("--context", "sandbox-admin", "--as", user, "status", GPU_A, "-o", "json")
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "RuntimeClasses" in line]
    assert len(warnings) == 1 and "judged by its name" in warnings[0], result.stderr
    assert 'cannot list resource "runtimeclasses"' in warnings[0]
    assert verdicts(result, namespace)["triton-runtime"] == ("stay", "gpu-runtime")


# -- pods that operators own (core/operators.py) ----------------------------------------------------
# Minimal CRDs stand for the operators' own; the owners are real objects, so the garbage collector
# keeps their pods. The pods carry what each operator writes on its pods (its controller reference
# and labels); their containers are those of the public examples, read at the tags named:
# - ray-project/kuberay v1.7.0: ray-operator/config/samples/ray-cluster.complete.yaml (head and
#   worker image rayproject/ray:2.52.0); the labels ray.io/cluster and ray.io/node-type (head,
#   worker) from ray-operator/controllers/ray/utils/constant.go, set in common/pod.go labelPod;
# - kubeflow/training-operator v1.9.0: examples/pytorch/simple.yaml (PyTorchJob kubeflow.org/v1,
#   image docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727); the labels
#   training.kubeflow.org/job-name and replica-type (lowercased) from
#   pkg/apis/kubeflow.org/v1/common_types.go, set in pkg/controller.v1/common/pod.go;
# - argoproj/argo-workflows v4.1.2: examples/hello-world.yaml (Workflow argoproj.io/v1alpha1, image
#   busybox); the label workflows.argoproj.io/workflow from workflow/common/common.go, set with the
#   Workflow as controller in workflow/controller/workflowpod.go;
# - kubeflow/spark-operator v2.5.2: examples/spark-pi.yaml (SparkApplication
#   sparkoperator.k8s.io/v1beta2, image docker.io/apache/spark:4.0.4); spark-role driver/executor
#   and sparkoperator.k8s.io/app-name from pkg/common/spark.go; an executor's controller is its
#   driver Pod (Spark 4.0.0, BasicExecutorFeatureStep.scala);
# - kubernetes-sigs/lws v0.10.0: config/samples/leaderworkerset_v1_leaderworkerset.yaml (image
#   nginxinc/nginx-unprivileged:1.27); leaderworkerset.sigs.k8s.io/name and worker-index from
#   api/leaderworkerset/v1/leaderworkerset_types.go, on the pods of its StatefulSets (a real one
#   here, so the landing check reads its template).
OPERATOR_CRDS = {("ray.io", "RayCluster", "v1"), ("kubeflow.org", "PyTorchJob", "v1"),
                 ("argoproj.io", "Workflow", "v1alpha1"),
                 ("sparkoperator.k8s.io", "SparkApplication", "v1beta2"),
                 ("example.com", "Widget", "v1")}


# *.k8s.io groups are protected: the API wants a reviewed API, or to be told that it is not one.
PROTECTED = {"annotations": {"api-approved.kubernetes.io": "unapproved, an e2e stand-in"}}


def crd(group, kind, version):
    plural = kind.lower() + "s"
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}", **(PROTECTED if group.endswith("k8s.io") else {})},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
                     "versions": [{"name": version, "served": True, "storage": True, "schema": {
                         "openAPIV3Schema": {"type": "object",
                                             "x-kubernetes-preserve-unknown-fields": True}}}]}}


def owned_pod(namespace, name, owner, image, labels):
    ref = owner and {"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                     "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                     "controller": True, "blockOwnerDeletion": True}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels, "ownerReferences": [ref]},
            "spec": {"affinity": PREFER_GPU_A,     # on the GPU node, free to land elsewhere
                     "containers": [{"name": "main", "image": image,
                                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}


def bare_pod(namespace, name):
    """A pod with no controller (someone's debugging shell): nothing would replace it."""
    the_pod = owned_pod(namespace, name, None, "busybox", {})
    del the_pod["metadata"]["ownerReferences"]
    return the_pod


def leader_statefulset(namespace):
    """A LeaderWorkerSet's leader StatefulSet as its controller writes it (the LWS itself left out)."""
    labels = {"leaderworkerset.sigs.k8s.io/name": "lws", "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "lws", "namespace": namespace},
            "spec": {"replicas": 1, "serviceName": "lws", "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "affinity": PREFER_GPU_A, "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "nginx", "image": "nginxinc/nginx-unprivileged:1.27",
                                         "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}}


@pytest.fixture
def operator_pods(clean, namespace):
    clean.apply(*[crd(*c) for c in OPERATOR_CRDS])
    for group, kind, _ in OPERATOR_CRDS:
        clean.kubectl("wait", "--for=condition=Established", f"crd/{kind.lower()}s.{group}", "--timeout=60s")
    try:
        owners = {}
        for group, kind, version in OPERATOR_CRDS:
            clean.apply({"apiVersion": f"{group}/{version}", "kind": kind,
                         "metadata": {"name": kind.lower(), "namespace": namespace}, "spec": {}})
            owners[kind] = clean.get_json(kind.lower() + "." + group, kind.lower(), "-n", namespace)
        ray = {"ray.io/cluster": "raycluster"}
        pods = [owned_pod(namespace, "ray-head", owners["RayCluster"], "rayproject/ray:2.52.0",
                          {**ray, "ray.io/node-type": "head"}),
                owned_pod(namespace, "ray-worker", owners["RayCluster"], "rayproject/ray:2.52.0",
                          {**ray, "ray.io/node-type": "worker"}),
                owned_pod(namespace, "torch-worker-0", owners["PyTorchJob"],
                          "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",
                          {"training.kubeflow.org/job-name": "pytorchjob",
                           "training.kubeflow.org/replica-type": "worker"}),
                owned_pod(namespace, "hello-world-step", owners["Workflow"], "busybox",
                          {"workflows.argoproj.io/workflow": "workflow",
                           "workflows.argoproj.io/completed": "false"}),
                owned_pod(namespace, "spark-pi-driver", owners["SparkApplication"],
                          "docker.io/apache/spark:4.0.4",
                          {"spark-role": "driver", "sparkoperator.k8s.io/app-name": "spark-pi"}),
                owned_pod(namespace, "widget-0", owners["Widget"], "busybox", {}),
                bare_pod(namespace, "debug-shell")]
        clean.apply(*pods, leader_statefulset(namespace))
        driver = clean.get_json("pod", "spark-pi-driver", "-n", namespace)
        clean.apply(owned_pod(namespace, "spark-pi-exec-1", driver, "docker.io/apache/spark:4.0.4",
                              {"spark-role": "executor", "sparkoperator.k8s.io/app-name": "spark-pi"}))
        count = len(pods) + 2             # and the executor and the LeaderWorkerSet's leader, lws-0
        wait_until("the operators' pods to run on the GPU node", lambda: len([
            p for p in clean.pods("-n", namespace) if p["status"].get("phase") == "Running"
            and p["spec"].get("nodeName") == GPU_A]) == count)
        yield namespace, {p["metadata"]["name"]: p for p in clean.pods("-n", namespace)}, clean
    finally:
        for group, kind, _ in OPERATOR_CRDS:
            clean.kubectl("delete", "crd", f"{kind.lower()}s.{group}", "--ignore-not-found")


def test_operator_owned_pods_are_judged_by_their_operator(gpuisolate, operator_pods):
    namespace, pods, sandbox = operator_pods
    status = gpuisolate("status", GPU_A, "-o", "json")
    assert status.returncode == 0, status.stderr
    document = json.loads(status.stdout)
    got = {p["name"]: p for node in document["nodes"] for p in node["pods"] if p["namespace"] == namespace}
    assert {n: (p["verdict"], p["reason"], p["flags"]) for n, p in got.items()} == {
        "ray-head": ("blocked", "gated", ["--allow-job-restart"]),
        "ray-worker": ("move", "not-tolerated", []),
        "torch-worker-0": ("blocked", "gated", ["--allow-job-restart"]),
        "hello-world-step": ("blocked", "gated", ["--allow-job-restart"]),
        "spark-pi-driver": ("blocked", "gated", ["--allow-job-restart"]),
        "spark-pi-exec-1": ("move", "not-tolerated", []),
        "lws-0": ("blocked", "gated", ["--allow-job-restart"]),
        "widget-0": ("move", "not-tolerated", []),
        "debug-shell": ("blocked", "gated", ["--force"])}
    assert "landing judged from the pod itself: RayCluster/raycluster's template is not read" in \
        got["ray-worker"]["message"]
    assert "the Kubeflow training operator restarts or fails the whole training job" in \
        got["torch-worker-0"]["message"]
    assert "which the plugin does not know" in got["widget-0"]["warning"]
    assert "Argo Workflows fails the workflow step" in got["hello-world-step"]["message"]
    assert "the Spark operator fails the Spark application" in got["spark-pi-driver"]["message"]
    assert "the Spark driver asks for a new executor" in got["spark-pi-exec-1"]["message"]
    assert "LeaderWorkerSet recreates the whole group" in got["lws-0"]["message"]

    # Refused as a whole (docs/output.md: exit 9), nothing evicted, until both gates are lifted: the
    # jobs' (--allow-job-restart) and the bare pod's (--force, as kubectl drain asks).
    evacuate = ["evacuate", GPU_A, "--taint-first", "--delete-emptydir-data", "--timeout", "3m"]
    uids = {n: p["metadata"]["uid"] for n, p in pods.items()}
    for lifted, still in (((), "--allow-job-restart"), (("--allow-job-restart",), "--force")):
        refused = gpuisolate(*evacuate, *lifted)
        assert refused.returncode == 9 and still in refused.stderr, refused.stderr
        assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in sandbox.pods("-n", namespace)} == uids
    allowed = gpuisolate(*evacuate, "--allow-job-restart", "--force")
    assert allowed.returncode == 0, allowed.stderr
    for name in pods:
        assert f"evicting pod {namespace}/{name}" in allowed.stderr, name
