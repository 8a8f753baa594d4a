"""The `scale` scenario for benchmarks: N nodes (M with GPUs) and P pods.

Loading speed: only etcd and kube-apiserver run while loading. Nodes are
created with a Ready status, pods already bound (spec.nodeName) and then
marked Running through pods/status by concurrent requests (kwok handles one
pod at a time in its stage matcher, ~60 pods/s here, so it is left out of the
critical path; it finds nothing to do when it starts). Pods have
ownerReferences to real ReplicaSets and DaemonSets (exact replica counts,
OnDelete DaemonSets), so the controllers find nothing to do either. Mix of pods:
  DaemonSet pods   cilium + kube-proxy (everywhere), nvidia-device-plugin (GPU
                   nodes), node-exporter (workers);
  GPU pods         one llm-*-predictor pod per GPU node (nvidia.com/gpu: 1);
  ordinary pods    ReplicaSet pods spread round-robin over all workers, GPU
                   nodes included (these are the "misplaced" ones);
  bare pods        1% of the ordinary pods have no owner.
"""
import threading
import time

from . import objects as o
from .procs import SandboxError

DEFAULTS = {"nodes": 2000, "gpu_nodes": 200, "pods": 60000}
RS_REPLICAS = 10
RS_PER_NS = 20
WORKERS = 24
DS_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]


def params(scenario, nodes, gpu_nodes, pods):
    if scenario != "scale":
        if any(v is not None for v in (nodes, gpu_nodes, pods)):
            raise SandboxError("--nodes/--gpu-nodes/--pods only apply to --scenario scale")
        return {}
    p = {"nodes": nodes or DEFAULTS["nodes"], "gpu_nodes": gpu_nodes if gpu_nodes is not None
         else DEFAULTS["gpu_nodes"], "pods": pods or DEFAULTS["pods"]}
    plan(p)  # validates
    return p


def plan(p):
    n, m = p["nodes"], p["gpu_nodes"]
    cp = 3 if n >= 10 else 0
    if m < 0 or m > n - cp:
        raise SandboxError(f"--gpu-nodes must be between 0 and {n - cp} for {n} nodes")
    workers = n - cp
    ds_pods = 2 * n + m + workers
    rest = p["pods"] - ds_pods - m
    if rest < 0:
        raise SandboxError(f"--pods must be at least {ds_pods + m} for {n} nodes (DaemonSet and GPU pods)")
    bare = rest // 100
    return {"cp": cp, "gpu": m, "cpu": workers - m, "ds_pods": ds_pods, "gpu_pods": m,
            "rs_pods": rest - bare, "bare_pods": bare}


def nodes(p):
    pl = plan(p)
    out = [o.node(f"scale-cp-{i:02d}", "control-plane", 8, 32) for i in range(pl["cp"])]
    out += [o.node(f"scale-gpu-{i:04d}", "worker", 48, 384, gpus=4) for i in range(pl["gpu"])]
    out += [o.node(f"scale-cpu-{i:04d}", "worker", 32, 128) for i in range(pl["cpu"])]
    return out


def _parallel(kube, items, fn, what, log):
    """Run fn(item) over items on WORKERS threads, each with its own connection."""
    chunks = [items[i::WORKERS] for i in range(WORKERS)]
    errors, done = [], [0]
    lock = threading.Lock()
    t0 = time.time()

    def run(chunk):
        try:
            for item in chunk:
                fn(item)
                with lock:
                    done[0] += 1
                    if done[0] % 10000 == 0:
                        log(f"  {what}: {done[0]}/{len(items)} ({done[0] / (time.time() - t0):.0f}/s)")
        except Exception as e:  # reported below, one line
            errors.append(e)
        finally:
            kube.close()
    threads = [threading.Thread(target=run, args=(c,)) for c in chunks if c]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SandboxError(f"creating {what} failed: {errors[0]}")
    log(f"created {len(items)} {what} in {time.time() - t0:.1f}s "
        f"({len(items) / max(time.time() - t0, 1e-3):.0f}/s)")


def _pod(ns, name, node, spec, labels, owner=None):
    meta = {"name": name, "namespace": ns, "labels": labels}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner["kind"],
                                    "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                    "controller": True, "blockOwnerDeletion": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": dict(spec, nodeName=node)}


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _node_status(node):
    now = _now()
    conds = [("MemoryPressure", "False", "KubeletHasSufficientMemory"),
             ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
             ("PIDPressure", "False", "KubeletHasSufficientPID"),
             ("Ready", "True", "KubeletReady")]
    node["status"]["conditions"] = [{"type": t, "status": s, "reason": r, "message": r,
                                     "lastHeartbeatTime": now, "lastTransitionTime": now}
                                    for t, s, r in conds]
    node["status"]["addresses"] = [{"type": "InternalIP", "address": "127.0.0.1"},
                                   {"type": "Hostname", "address": node["metadata"]["name"]}]
    node["status"]["phase"] = "Running"
    return node


def _running(pod, index):
    """The status kwok's pod-ready stage would write; podIP inside kwok's --cidr."""
    now = _now()
    ip = f"10.{128 + (index >> 16)}.{(index >> 8) & 255}.{index & 255}"
    return {"status": {
        "phase": "Running", "hostIP": "127.0.0.1", "hostIPs": [{"ip": "127.0.0.1"}],
        "podIP": ip, "podIPs": [{"ip": ip}], "startTime": now,
        "conditions": [{"type": t, "status": "True", "lastTransitionTime": now}
                       for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
        "containerStatuses": [{"name": c["name"], "image": c["image"], "imageID": "", "ready": True,
                               "restartCount": 0, "started": True, "state": {"running": {"startedAt": now}}}
                              for c in pod["spec"]["containers"]]}}


def _suffix(i):
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    s = ""
    for _ in range(5):
        i, r = divmod(i, len(alphabet))
        s += alphabet[r]
    return s


def load(kube, p, log):
    pl = plan(p)
    all_nodes = nodes(p)
    names = [n["metadata"]["name"] for n in all_nodes]
    gpus = names[pl["cp"]:pl["cp"] + pl["gpu"]]
    workers = names[pl["cp"]:]
    # Interleave GPU and CPU workers so round-robin placement hits GPU nodes proportionally.
    step = max(1, len(workers) // max(1, len(gpus)))
    cpu_only = names[pl["cp"] + pl["gpu"]:]
    order = []
    gi = ci = 0
    while gi < len(gpus) or ci < len(cpu_only):
        if gi < len(gpus):
            order.append(gpus[gi])
            gi += 1
        order.extend(cpu_only[ci:ci + max(1, step - 1)])
        ci += max(1, step - 1)
    workers = order if order else workers
    n_app_ns = max(1, -(-pl["rs_pods"] // (RS_REPLICAS * RS_PER_NS)))
    namespaces = ["kube-system", "kommander", "scale-inference"] + \
        [f"scale-app-{i:03d}" for i in range(n_app_ns)]
    for ns in namespaces:
        kube.create(o.namespace(ns), exist_ok=True)
    _parallel(kube, all_nodes, lambda n: kube.create(_node_status(n), exist_ok=True), "nodes", log)

    small = o.pod_spec("registry.example/app:1.0", "50m", "64Mi")
    pods = []
    # DaemonSets and their pods
    ds_defs = [("kube-system", "cilium", o.TOLERATE_ALL, None, names),
               ("kube-system", "kube-proxy", o.TOLERATE_ALL, None, names),
               ("kommander", "nvidia-device-plugin-daemonset", [o.GPU_TOLERATION],
                {"nvidia.com/gpu.present": "true"}, gpus),
               ("kommander", "kube-prometheus-stack-prometheus-node-exporter", None, None, workers)]
    for ns, name, tol, sel, targets in ds_defs:
        spec = o.pod_spec(f"registry.example/{name}:1.0", "50m", "64Mi", tolerations=tol, node_selector=sel)
        ds = kube.create(o.daemonset(ns, name, spec, on_delete=True))
        labels = {"app.kubernetes.io/name": name}
        for i, node in enumerate(targets):
            pspec = dict(spec, tolerations=(tol or []) + DS_TOLERATIONS, affinity={"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}})
            pods.append(_pod(ns, f"{name}-{_suffix(i)}", node, pspec, labels, ds))
    # GPU inference pods, one per GPU node
    gspec = o.pod_spec("nutanix/nai-kserve-huggingfaceserver:v0.15.2", "4", "16Gi", gpus=1,
                       tolerations=[o.GPU_TOLERATION])
    for r in range(-(-len(gpus) // RS_REPLICAS)):
        labels = {"app.kubernetes.io/name": f"llm-{r:03d}-predictor", "pod-template-hash": "566f5bdd89"}
        part = gpus[r * RS_REPLICAS:(r + 1) * RS_REPLICAS]
        rs = kube.create(o.replicaset("scale-inference", f"llm-{r:03d}-predictor-566f5bdd89", len(part),
                                      gspec, labels))
        for i, node in enumerate(part):
            pods.append(_pod("scale-inference", f"{rs['metadata']['name']}-{_suffix(i)}", node, gspec,
                             labels, rs))
    # Ordinary ReplicaSet pods and bare pods, round-robin over all workers
    k = 0
    left = pl["rs_pods"]
    for nsi in range(n_app_ns):
        ns = f"scale-app-{nsi:03d}"
        for r in range(RS_PER_NS):
            if left <= 0:
                break
            reps = min(RS_REPLICAS, left)
            left -= reps
            labels = {"app.kubernetes.io/name": f"app-{r:02d}", "pod-template-hash": "7d9f8c6b5"}
            rs = kube.create(o.replicaset(ns, f"app-{r:02d}-7d9f8c6b5", reps, small, labels))
            for i in range(reps):
                pods.append(_pod(ns, f"app-{r:02d}-7d9f8c6b5-{_suffix(i)}", workers[k % len(workers)],
                                 small, labels, rs))
                k += 1
    for i in range(pl["bare_pods"]):
        ns = f"scale-app-{i % n_app_ns:03d}"
        pods.append(_pod(ns, f"debug-{i:05d}", workers[k % len(workers)], small,
                         {"app.kubernetes.io/name": "debug"}))
        k += 1
    for nsi in range(n_app_ns):
        ns = f"scale-app-{nsi:03d}"
        budget = {"min_available": "100%"} if nsi % 10 == 0 else {"max_unavailable": 1}
        kube.create(o.pdb(ns, "app-00", "app-00", **budget))
    for i, pod in enumerate(pods):
        pod["_index"] = i + 1

    def create(pod):
        index = pod.pop("_index")
        kube.create(pod, exist_ok=True)
        kube.patch("pods", pod["metadata"]["name"], _running(pod, index), pod["metadata"]["namespace"],
                   sub="status")
    _parallel(kube, pods, create, "pods (created, then marked Running)", log)


def wait(kube, p, log, timeout=1800):
    """Until every node is Ready and untainted by conditions, and every pod runs."""
    pl = plan(p)
    total = pl["ds_pods"] + pl["gpu_pods"] + pl["rs_pods"] + pl["bare_pods"]
    t0 = time.time()
    last = ""
    while time.time() - t0 < timeout:
        pending = kube.get("pods", fieldSelector="status.phase!=Running", limit=1)
        first = kube.get("pods", limit=1)
        n_pods = len(first.get("items", [])) + first["metadata"].get("remainingItemCount", 0)
        tainted = ["?"]
        if n_pods == total and not pending.get("items"):
            tainted = [n["metadata"]["name"] for n in kube.list("nodes", limit=500)
                       if any(t["key"].startswith("node.kubernetes.io/")
                              for t in n["spec"].get("taints") or [])]
        msg = (f"{n_pods}/{total} pods, {'some' if pending.get('items') else 'none'} not Running, "
               f"{'?' if tainted == ['?'] else len(tainted)} nodes with condition taints")
        if msg != last:
            log(f"  {msg} ({time.time() - t0:.0f}s)")
            last = msg
        if n_pods == total and not pending.get("items") and not tainted:
            log(f"all {total} pods Running on {p['nodes']} nodes after {time.time() - t0:.1f}s")
            _settle_controllers(kube, pl, log, timeout - (time.time() - t0))
            return
        time.sleep(3)
    raise SandboxError(f"scale scenario not settled after {timeout}s: {last}")


def _settle_controllers(kube, pl, log, timeout):
    """DaemonSet status can be computed while new nodes still carry the not-ready
    taint (the controller may miss the taint removal at start-up); nudge each
    DaemonSet once, then wait for DaemonSet and PDB status to match the pods."""
    t0 = time.time()
    want = {"cilium": pl["cp"] + pl["gpu"] + pl["cpu"], "kube-proxy": pl["cp"] + pl["gpu"] + pl["cpu"],
            "nvidia-device-plugin-daemonset": pl["gpu"],
            "kube-prometheus-stack-prometheus-node-exporter": pl["gpu"] + pl["cpu"]}
    for ds in kube.list("daemonsets"):
        m = ds["metadata"]
        kube.patch("daemonsets", m["name"], {"metadata": {"annotations": {
            "sandbox.gpuisolate.dev/resync": str(int(time.time()))}}}, m["namespace"])
    while time.time() - t0 < timeout:
        bad = [d["metadata"]["name"] for d in kube.list("daemonsets")
               if d.get("status", {}).get("numberReady") != want.get(d["metadata"]["name"])
               or d["status"].get("desiredNumberScheduled") != want.get(d["metadata"]["name"])]
        bad += [f"pdb {b['metadata']['namespace']}/{b['metadata']['name']}"
                for b in kube.list("poddisruptionbudgets")
                if b.get("status", {}).get("observedGeneration") != b["metadata"]["generation"]
                or b["status"].get("currentHealthy") != b["status"].get("expectedPods")]
        if not bad:
            log(f"DaemonSet and PDB status settled after {time.time() - t0:.1f}s")
            return
        time.sleep(2)
    raise SandboxError(f"controllers did not settle: {', '.join(bad[:5])}")
