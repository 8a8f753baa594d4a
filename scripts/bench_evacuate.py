"""The evacuate workload of scripts/bench: two GPU nodes with N movable pods each, reset before
every run so that `kubectl gpuisolate evacuate --taint-first` and `kubectl drain` + `uncordon` start from
the same state.

The bench adds its own kwok nodes to the sandbox (labelled gpuisolate-bench=...): two GPU nodes
(`nvidia.com/gpu.present=true`, 4 GPUs, room for 500 pods) and four landing nodes.  On each GPU node
it runs one GPU pod (a ReplicaSet of 1 pinned to the node, requesting nvidia.com/gpu and tolerating
the GPU taint) and N ordinary pods (a ReplicaSet of N pinned to the node by nodeSelector while they
are created; then the ReplicaSet's template is pointed at the landing nodes, so the replacements of
evicted pods are scheduled there, as they would be elsewhere in a real cluster).  No
PodDisruptionBudget covers them, so neither side waits for one.  The sandbox's DaemonSets put their
pods on the bench nodes too; both sides leave those alone.
"""
import json
import subprocess
import time

NS = "gpuisolate-bench"
LABEL = "gpuisolate-bench"
GPU_NODES = ("bench-gpu-0", "bench-gpu-1")
LAND_NODES = tuple(f"bench-land-{i}" for i in range(4))
GPU_TAINT_KEY = "nvidia.com/gpu"


def _node(name, role):
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              LABEL: role}
    capacity = {"cpu": "96", "memory": "768Gi", "pods": "500", "ephemeral-storage": "1Ti"}
    if role == "gpu":
        labels.update({"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "4"})
        capacity["nvidia.com/gpu"] = "4"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "annotations": {"kwok.x-k8s.io/node": "fake"}},
            "spec": {}, "status": {"capacity": capacity, "allocatable": capacity}}


def _replicaset(name, node, replicas, gpu):
    labels = {LABEL: "gpu" if gpu else "app", "app": name}
    container = {"name": "main", "image": "registry.example/bench:1.0",
                 "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}
    spec = {"containers": [container], "terminationGracePeriodSeconds": 30}
    if gpu:
        container["resources"] = {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
                                  "limits": {"nvidia.com/gpu": "1"}}
        spec["tolerations"] = [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    else:
        # Kept to the bench's nodes, but not pinned to one: evacuate's landing check leaves a
        # pinned pod in place (its replacement could land nowhere else).  reset() places them
        # by cordoning the other bench nodes.
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": LABEL, "operator": "Exists"}]}]}}}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": NS, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


def _items(*objects):
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})


class Workload:
    def __init__(self, kubectl, env, log, gpu_nodes=GPU_NODES, land_nodes=LAND_NODES):
        self.kubectl, self.env, self.log = kubectl, env, log
        self.gpu_nodes, self.land_nodes = tuple(gpu_nodes), tuple(land_nodes)

    def k(self, *args, stdin=None, check=True):
        proc = subprocess.run([self.kubectl, *args], input=stdin, capture_output=True, text=True,
                              env=self.env)
        if check and proc.returncode != 0:
            raise SystemExit(f"bench: kubectl {' '.join(args[:3])} failed: {proc.stderr.strip()[-300:]}")
        return proc.stdout

    def items(self, *args):
        return json.loads(self.k("get", *args, "-o", "json"))["items"]

    def wait(self, what, check, timeout=300):
        deadline = time.monotonic() + timeout
        while True:
            ok, detail = check()
            if ok:
                return
            if time.monotonic() > deadline:
                raise SystemExit(f"bench: timed out waiting for {what}: {detail}")
            time.sleep(0.3)

    # -- the pods ---------------------------------------------------------------------------------
    def pods(self, role):
        return [p for p in self.items("pods", "-n", NS, "-l", f"{LABEL}={role}")
                if not p["metadata"].get("deletionTimestamp")]

    def _gpu_pods_ready(self):
        pods = self.pods("gpu")
        per_node = {n: [p for p in pods if p["spec"].get("nodeName") == n
                        and p["status"].get("phase") == "Running"] for n in self.gpu_nodes}
        ok = all(len(v) == 1 for v in per_node.values()) and len(pods) == len(self.gpu_nodes)
        return ok, f"GPU pods per node: { {n: len(v) for n, v in per_node.items()} }"

    def setup(self):
        self.cleanup()
        self.log(f"evacuate: creating nodes {', '.join(self.gpu_nodes + self.land_nodes)} and namespace {NS}")
        nodes = [_node(n, "gpu") for n in self.gpu_nodes] + [_node(n, "land") for n in self.land_nodes]
        self.k("create", "-f", "-", stdin=_items(*nodes))
        for node in nodes:   # a create may drop the status; the capacity is what matters
            self.k("patch", "node", node["metadata"]["name"], "--subresource=status", "--type=merge",
                   "-p", json.dumps({"status": node["status"]}))
        self.k("create", "namespace", NS)

        def ready():
            found = self.items("nodes", "-l", LABEL)
            good = [n for n in found if any(c["type"] == "Ready" and c["status"] == "True"
                                            for c in n.get("status", {}).get("conditions") or ())]
            return len(good) == len(nodes), f"{len(good)}/{len(nodes)} Ready"
        self.wait("the bench nodes to be Ready", ready)
        self.k("create", "-f", "-", stdin=_items(*[_replicaset(f"gpu-{i}", n, 1, True)
                                                   for i, n in enumerate(self.gpu_nodes)]))
        self.wait("the GPU pods", self._gpu_pods_ready)

    def reset(self, pods):
        """Untainted, uncordoned GPU nodes, each with its GPU pod and `pods` Running ordinary pods.
        Returns the UIDs of the GPU pods."""
        self.clear("rs")
        for i, node in enumerate(self.gpu_nodes):     # each node's pods while only it is schedulable
            self.k("cordon", *[n for n in self.gpu_nodes + self.land_nodes if n != node])
            self.k("uncordon", node)
            self.k("create", "-f", "-", stdin=_items(_replicaset(f"app-{i}", node, pods, False)))
            self.wait(f"{pods} pods on {node}", lambda node=node: self._placed(node, pods))
        self.k("uncordon", *self.gpu_nodes, *self.land_nodes)
        return {p["metadata"]["uid"] for p in self.pods("gpu")}

    def clear(self, kinds):
        """The GPU nodes untainted and uncordoned, the ordinary pods and their ``kinds`` (a
        kubectl resource list) gone, the GPU pods Running: where every reset starts."""
        for name in self.gpu_nodes:
            self.k("patch", "node", name, "--type=merge", "-p",
                   '{"spec":{"taints":null,"unschedulable":null}}')
        self.k("delete", kinds, "-n", NS, "-l", f"{LABEL}=app", "--wait=false")
        self.k("delete", "pods", "-n", NS, "-l", f"{LABEL}=app", "--grace-period=0", "--force",
               "--wait=false")
        self.wait("the old bench pods to go",
                  lambda: (not self.items("pods", "-n", NS, "-l", f"{LABEL}=app"), "pods left"))
        self.wait("the GPU pods", self._gpu_pods_ready)

    def _placed(self, node, pods):
        running = [p for p in self.pods("app") if p["status"].get("phase") == "Running"
                   and p["spec"].get("nodeName") == node]
        return len(running) == pods, f"{len(running)} of {pods} Running on {node}"

    def after(self, gpu_uids):
        """(GPU pods restarted, ordinary pods still on the GPU nodes)."""
        now = {p["metadata"]["uid"] for p in self.pods("gpu")}
        left = [p for p in self.pods("app") if p["spec"].get("nodeName") in self.gpu_nodes]
        return len(gpu_uids - now), len(left)

    def cleanup(self):
        if self.k("get", "namespace", NS, "--ignore-not-found", "-o", "name").strip():
            self.k("delete", "namespace", NS, "--wait=false")
        self.k("delete", "nodes", "-l", LABEL, "--ignore-not-found", "--wait=false")
        for name in self.gpu_nodes + self.land_nodes:    # the DaemonSet pods bound to them
            self.k("delete", "pods", "-A", f"--field-selector=spec.nodeName={name}", "--grace-period=0",
                   "--force", "--wait=false", check=False)
        self.wait(f"namespace {NS} to be deleted",
                  lambda: (not self.k("get", "namespace", NS, "--ignore-not-found", "-o", "name").strip(),
                           "still terminating"), timeout=180)


def measure(workload, pods, reps, plugin, kubectl, env, timed, log, plugin_flags=(), timeout="10m"):
    """Alternates evacuate and drain+uncordon (ABBA), resetting before each run; ``plugin_flags``
    go to evacuate, ``timeout`` to both sides.
    Returns {"plugin": [(seconds, gpu pods restarted)], "kubectl": [...]}."""
    nodes = list(workload.gpu_nodes)
    sides = {
        "plugin": [plugin("evacuate", "--taint-first", "--delete-emptydir-data", *plugin_flags,
                          "--timeout", timeout, *nodes)],
        "kubectl": [[kubectl, "drain", *nodes, "--ignore-daemonsets", "--delete-emptydir-data",
                     f"--timeout={timeout}"], [kubectl, "uncordon", *nodes]],
    }
    samples = {"plugin": [], "kubectl": []}
    for rep in range(reps):
        for side in (("plugin", "kubectl") if rep % 2 == 0 else ("kubectl", "plugin")):
            gpu_uids = workload.reset(pods)
            wall = 0.0
            for cmd in sides[side]:
                result = timed(cmd, env)
                if result.rc != 0:
                    raise SystemExit(f"bench: {' '.join(cmd[:4])} ... failed ({result.rc}): "
                                     f"{result.err[-500:]}")
                wall += result.wall     # the command's own time, without its measurer's start-up
            restarted, left = workload.after(gpu_uids)
            if left:
                raise SystemExit(f"bench: {side}: {left} ordinary pod(s) still on the GPU nodes")
            samples[side].append((wall, restarted))
            log(f"evacuate {pods}/node rep {rep + 1}/{reps}: {side} {wall:.2f}s, "
                f"{restarted} GPU pod(s) restarted")
    return samples
