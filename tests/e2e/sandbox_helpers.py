"""Helpers for end-to-end tests against the local sandbox (scripts/sandbox)."""
import collections
import contextlib
import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "sandbox"
KUBECTL = os.environ.get("SANDBOX_KUBECTL", "/usr/bin/kubectl")

# Names from the seed scenario (tests/sandbox/README.md).
GPU_A = "nkpnai-gpupool-1-z9mz6-pl9k2-4n5fm"
GPU_B = "nkpnai-gpupool-1-z9mz6-pl9k2-9xdn9"
GPU_NODES = [GPU_A, GPU_B]
CPU_WORKERS = ["nkpnai-md-0-xqwvn-zlrmk-62gc2", "nkpnai-md-0-xqwvn-zlrmk-c5h88",
               "nkpnai-md-0-xqwvn-zlrmk-knrqk", "nkpnai-md-0-xqwvn-zlrmk-zhdm4"]
CONTROL_PLANE = ["nkpnai-vvzvd-cctr2", "nkpnai-vvzvd-ck76s", "nkpnai-vvzvd-k4z42"]
ALL_NODES = GPU_NODES + CPU_WORKERS + CONTROL_PLANE
# The seed's rook-ceph Deployments on GPU B that have nowhere else to land (tests/sandbox/sandboxctl/seed.py):
# pinned by a hostname nodeSelector, or (the OSD) on a local PV there.
ROOK_PINNED = {f"rook-ceph-crashcollector-{GPU_B}", f"rook-ceph-exporter-{GPU_B}", "rook-ceph-mon-c",
               "rook-ceph-osd-1"}


class SandboxNotReady(RuntimeError):
    pass


class Sandbox:
    """A running sandbox: its directory, kubeconfig and a kubectl runner."""

    # True while the seed is as the last reset left it (conftest's ``seed`` and ``clean``).
    untouched = False

    def __init__(self, directory=None):
        self.dir = Path(directory or os.environ.get("SANDBOX_DIR") or REPO / ".sandbox").resolve()
        self.kubeconfig = self.dir / "kubeconfig"
        # The Kubernetes minor this run asks for (tests/sandbox/sandboxctl/versions.py's rule).
        self.minor = (os.environ.get("SANDBOX_K8S_VERSION") or "1.33").strip().lstrip("v")

    def release(self):
        """The running control plane's release, e.g. "v1.33.5"."""
        return self.state()["release"]

    def minor_at_least(self, minor):
        return tuple(int(x) for x in self.minor.split(".")) >= tuple(int(x) for x in minor.split("."))

    # scripts/sandbox --------------------------------------------------------
    def script(self, *args, check=True, timeout=1800):
        env = dict(os.environ, SANDBOX_DIR=str(self.dir))
        r = subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=timeout)
        if check and r.returncode != 0:
            raise SandboxNotReady(f"scripts/sandbox {' '.join(args)} failed ({r.returncode}): "
                                  f"{r.stderr.strip() or r.stdout.strip()}")
        return r

    def is_up(self):
        return self.script("status", check=False).returncode == 0

    def state(self):
        return json.loads((self.dir / "state.json").read_text())

    def ensure_up(self):
        """Start the seed sandbox unless one is up. Returns True if this call started it."""
        if self.is_up():
            scenario = self.state().get("scenario")
            if scenario != "seed":
                raise SandboxNotReady(f"a sandbox with scenario {scenario!r} is running in {self.dir}; "
                                      "the e2e tests need the seed scenario (scripts/sandbox down; up)")
            running = self.state().get("k8s_version", "1.33")
            if running != self.minor:
                raise SandboxNotReady(f"a Kubernetes {running} sandbox is running in {self.dir}, and this "
                                      f"run asks for {self.minor} (SANDBOX_K8S_VERSION); "
                                      "use another SANDBOX_DIR")
            return False
        self.script("up")
        return True

    def reset(self):
        return self.script("reset")

    def down(self):
        return self.script("down")

    # kubectl ------------------------------------------------------------------
    def kubectl(self, *args, context=None, check=True, input=None, timeout=300):
        cmd = [KUBECTL, f"--kubeconfig={self.kubeconfig}"]
        if context:
            cmd.append(f"--context={context}")
        r = subprocess.run([*cmd, *args], capture_output=True, text=True, input=input, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
        return r

    def apply(self, *objects):
        """kubectl apply of API objects (dicts), as one List."""
        return self.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                  "items": list(objects)}))

    def get_json(self, *args, context=None):
        return json.loads(self.kubectl("get", *args, "-o", "json", context=context).stdout)

    def pods(self, *args):
        """Pods of all namespaces (or pass -n NS / -l SELECTOR ...)."""
        return self.get_json("pods", *(args or ("-A",)))["items"]

    def pods_on(self, node):
        return self.get_json("pods", "-A", f"--field-selector=spec.nodeName={node}")["items"]


def owner_kind(pod):
    refs = pod["metadata"].get("ownerReferences") or []
    return refs[0]["kind"] if refs else None


def app_name(pod):
    return pod["metadata"].get("labels", {}).get("app.kubernetes.io/name")


def wait_until(what, predicate, timeout=120, interval=1.0):
    """Poll predicate() until it returns a truthy value; returns that value."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class UnansweringServers(collections.namedtuple("UnansweringServers", "silent closed accepted")):
    """``silent``: a port that accepts connections and never answers (a client's request timeout
    has something to hit); ``closed``: a port where nothing listens (a refused connection);
    ``accepted``: an Event set once the silent port has accepted a connection."""


@contextlib.contextmanager
def unanswering_servers():
    """UnansweringServers on 127.0.0.1, for as long as the block runs."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    accepted, held, stop = threading.Event(), [], threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
                accepted.set()
            except socket.timeout:
                continue
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    try:
        yield UnansweringServers(listener.getsockname()[1], closed, accepted)
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()
