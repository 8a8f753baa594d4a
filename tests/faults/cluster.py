"""The real API server's view, for checking invariants: an admin client (the
sandbox's own, tests/sandbox/sandboxctl), a streaming watch, snapshots of nodes
and pods, and an oracle that classifies pods independently of the plugin."""

import http.client
import json
import socket
import ssl
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "sandbox"))
from sandboxctl.kube import ApiError, Kube  # noqa: E402

GPU_KEY = "nvidia.com/gpu"
GPU_PRESENT = "nvidia.com/gpu.present"
MIRROR = "kubernetes.io/config.mirror"


class Admin:
    """The sandbox admin (client certificate, system:masters), straight to the API server."""

    def __init__(self, sandbox_dir):
        self.dir = Path(sandbox_dir)
        self.pki = self.dir / "pki"
        self.server = json.loads((self.dir / "state.json").read_text())["server"]
        self.kube = Kube(self.server, str(self.pki / "ca.crt"), str(self.pki / "admin.crt"),
                         str(self.pki / "admin.key"), timeout=60)

    def context(self):
        ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        ctx.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return ctx

    # -- reads ------------------------------------------------------------------------------------
    def nodes(self):
        return {n["metadata"]["name"]: n for n in self.kube.list("nodes")}

    def gpu_nodes(self):
        return sorted(name for name, n in self.nodes().items()
                      if (n["metadata"].get("labels") or {}).get(GPU_PRESENT) == "true")

    def pods(self):
        return {p["metadata"]["uid"]: p for p in self.kube.list("pods")}

    def local_claims(self):
        """{(namespace, claim): node} for the claims bound to a PersistentVolume that one node's
        hostname pins (a `local` volume): the oracle's "nowhere" pods mount one on their node."""
        out = {}
        for pv in self.kube.list("persistentvolumes"):
            ref = pv["spec"].get("claimRef") or {}
            terms = (((pv["spec"].get("nodeAffinity") or {}).get("required") or {})
                     .get("nodeSelectorTerms") or [])
            nodes = [v for t in terms for e in t.get("matchExpressions") or ()
                     if e.get("key") == "kubernetes.io/hostname" and e.get("operator") == "In"
                     for v in e.get("values") or ()]
            if ref.get("name") and len(nodes) == 1:
                out[(ref.get("namespace", ""), ref["name"])] = nodes[0]
        return out


class Watch:
    """Lists ``path``, then watches it from that resourceVersion in a thread until ``stop()``;
    calls ``on_list(items)`` after every (re)list and ``on_event(type, obj)`` for each event."""

    def __init__(self, admin, path, on_event, on_list=None):
        self.admin, self.path, self.on_event, self.on_list = admin, path, on_event, on_list
        self._stop = threading.Event()
        self._conn = None
        self._thread = None

    def start(self):
        self._thread = run_in_thread(self._run)
        return self

    def stop(self):
        self._stop.set()
        conn = self._conn
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)      # unblocks the reading thread
            except OSError:
                pass
        self._thread.join(timeout=10)

    def _run(self):
        url = urlsplit(self.admin.server)
        ctx = self.admin.context()
        version = None
        while not self._stop.is_set():
            if version is None:
                try:
                    page = self.admin.kube.request("GET", self.path)
                except (ApiError, OSError, http.client.HTTPException):
                    self._stop.wait(0.5)
                    continue
                if self.on_list:
                    self.on_list(page.get("items") or [])
                version = page["metadata"]["resourceVersion"]
            self._conn = conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx,
                                                            timeout=120)
            try:
                query = urlencode({"watch": "1", "resourceVersion": version,
                                   "allowWatchBookmarks": "true", "timeoutSeconds": "60"})
                conn.request("GET", f"{self.path}?{query}", headers={"Accept": "application/json"})
                response = conn.getresponse()
                buffer = b""
                while not self._stop.is_set():
                    chunk = response.read1(65536)
                    if not chunk:
                        break
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        event = json.loads(line)
                        if event["type"] == "ERROR":       # 410 Gone: list again
                            version = None
                            break
                        version = event["object"]["metadata"].get("resourceVersion") or version
                        if event["type"] != "BOOKMARK":
                            self.on_event(event["type"], event["object"])
                    if version is None:
                        break
            except (OSError, http.client.HTTPException, ValueError):
                self._stop.wait(0.2)
            finally:
                conn.close()


def ready(pod):
    return (pod.get("status", {}).get("phase") == "Running"
            and not pod["metadata"].get("deletionTimestamp")
            and any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in pod.get("status", {}).get("conditions") or ()))


def owner(pod):
    refs = [r for r in pod["metadata"].get("ownerReferences") or () if r.get("controller")]
    return (refs[0]["kind"], refs[0]["name"]) if refs else (None, None)


def _requests_gpu(pod):
    for c in (pod["spec"].get("containers") or []) + (pod["spec"].get("initContainers") or []):
        res = c.get("resources") or {}
        if any(k.startswith("nvidia.com/") for part in ("requests", "limits")
               for k in (res.get(part) or {})):
            return True
    return False


def _tolerates_gpu(pod, value):
    for t in pod["spec"].get("tolerations") or ():
        key, op, effect = t.get("key") or "", t.get("operator") or "Equal", t.get("effect") or ""
        if effect not in ("", "NoSchedule"):
            continue
        if op == "Exists" and key in ("", GPU_KEY):
            return True
        if op == "Equal" and key == GPU_KEY and (t.get("value") or "") == value:
            return True
    return False


def _pinned_here(pod, local_claims):
    """Its replacement could run on its own node only: a hostname nodeSelector naming that node,
    or a claim on a volume that node's hostname pins (``local_claims``, Admin.local_claims())."""
    node, ns = pod["spec"].get("nodeName"), pod["metadata"].get("namespace", "")
    if (pod["spec"].get("nodeSelector") or {}).get("kubernetes.io/hostname") == node:
        return True
    claims = [(v.get("persistentVolumeClaim") or {}).get("claimName")
              for v in pod["spec"].get("volumes") or ()]
    return any((local_claims or {}).get((ns, c)) == node for c in claims if c)


def classify(pod, taint_value="true", local_claims=None):
    """Why a pod on a GPU node must stay, or "move": the oracle, written apart from the planner
    (``taint_value``: the value of the node's nvidia.com/gpu:NoSchedule taint). "nowhere": pinned
    to its node (it has nowhere else to land while that node is evacuated)."""
    if pod["metadata"].get("deletionTimestamp"):
        return "terminating"
    if MIRROR in (pod["metadata"].get("annotations") or {}):
        return "mirror"
    if owner(pod)[0] == "DaemonSet":
        return "daemonset"
    if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
        return "finished"
    if _requests_gpu(pod):
        return "gpu"
    if _tolerates_gpu(pod, taint_value):
        return "tolerates"
    if owner(pod)[0] and _pinned_here(pod, local_claims):
        return "nowhere"
    return "move"


def pods_on(pods, nodes):
    return {uid: p for uid, p in pods.items() if p["spec"].get("nodeName") in nodes}


def ref(pod):
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def node_taints(node):
    return [dict(t) for t in (node.get("spec") or {}).get("taints") or ()]


def wait_for(what, check, timeout=120, interval=0.3):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def run_in_thread(target, *args):
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread
