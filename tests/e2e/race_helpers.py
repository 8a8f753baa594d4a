"""What the control-plane fault and competing-actor tests share: the quorum workload on GPU A
under a PodDisruptionBudget that allows one disruption, a plugin run whose output is read line by
line while it runs (so a fault can be timed to a line), and the checks of an evacuation against
the cluster's own record: the soak's Checker (tests/faults/checks.py), the PDB monitor, and the
API server's audit log of evictions."""

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from sandbox_helpers import GPU_A, GPU_NODES, REPO, wait_until

sys.path.insert(0, str(Path(REPO) / "tests"))
from faults import audit  # noqa: E402
from faults.checks import Checker, gpu_value  # noqa: E402
from faults.cluster import Admin, ready  # noqa: E402
from faults.monitor import PdbMonitor  # noqa: E402
from faults.soak import Spec  # noqa: E402

PLUGIN_AGENT = "kubectl-gpuisolate/"


GATE = "e2e.gpuisolate/held"


def quorum(sandbox, namespace, replicas=6, node=GPU_A, held=False):
    """``replicas`` pods preferring ``node``, all Ready there, under a PDB of minAvailable
    replicas - 1 that allows one disruption.

    ``held``: a ReplicaSet, not a Deployment, whose template gets a scheduling gate once its
    pods run, so the replacement of the first pod evicted stays Pending (as one whose image
    takes long to pull) and the budget refuses every eviction after it until ``release``: a
    fault timed from the first refusal then finds the run still retrying, however late it
    comes (unheld, the six pods go in ~0.4 s).  The plugin cannot foresee a gate."""
    labels = {"app": "quorum"}
    spec = {"containers": [{"name": "main", "image": "busybox",
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
            "terminationGracePeriodSeconds": 0,
            "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "preference": {"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}}]}}}
    kind = "ReplicaSet" if held else "Deployment"
    sandbox.apply({"apiVersion": "apps/v1", "kind": kind,
                   "metadata": {"name": "quorum", "namespace": namespace},
                   "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                            "template": {"metadata": {"labels": labels}, "spec": spec}}})
    wait_until(f"{replicas} quorum pods Ready on {node}", lambda: sum(
        1 for p in sandbox.pods("-n", namespace, "-l", "app=quorum")
        if ready(p) and p["spec"].get("nodeName") == node) == replicas)
    if held:
        sandbox.kubectl("patch", "replicaset", "-n", namespace, "quorum", "--type=merge", "-p",
                        json.dumps({"spec": {"template": {"spec": {"schedulingGates": [{"name": GATE}]}}}}))
    sandbox.apply({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                   "metadata": {"name": "quorum", "namespace": namespace},
                   "spec": {"minAvailable": replicas - 1, "selector": {"matchLabels": labels}}})
    wait_until("the quorum PDB to allow 1", lambda: sandbox.get_json(
        "pdb", "-n", namespace, "quorum")["status"].get("disruptionsAllowed") == 1)


def release(sandbox, namespace):
    """Ends a held quorum's hold: no gate on its later replacements, and none on those waiting."""
    sandbox.kubectl("patch", "replicaset", "-n", namespace, "quorum", "--type=json", "-p",
                    '[{"op": "remove", "path": "/spec/template/spec/schedulingGates"}]')
    for pod in sandbox.pods("-n", namespace, "-l", "app=quorum"):
        if pod["spec"].get("schedulingGates"):
            sandbox.kubectl("patch", "pod", "-n", namespace, pod["metadata"]["name"], "--type=json", "-p",
                            '[{"op": "remove", "path": "/spec/schedulingGates"}]')


class Run:
    """A command started now; ``on_line(stream, line)`` is called in a reader thread for every
    line of its stdout and stderr as it is written."""

    def __init__(self, argv, env, on_line=None):
        self.on_line = on_line or (lambda stream, line: None)
        self.started = time.monotonic()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=dict(env, PYTHONUNBUFFERED="1"), bufsize=1)
        self.lines = {"stdout": [], "stderr": []}
        self._readers = [threading.Thread(target=self._read, args=(name, stream), daemon=True)
                         for name, stream in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr))]
        for reader in self._readers:
            reader.start()

    def _read(self, name, stream):
        for line in stream:
            self.lines[name].append(line)
            self.on_line(name, line.rstrip("\n"))

    def wait(self, timeout):
        """(exit code, stdout, stderr, seconds); kills it past ``timeout`` (a hang fails)."""
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"still running after {timeout}s: "
                                 f"{''.join(self.lines['stderr'])[-2000:]}") from None
        seconds = time.monotonic() - self.started
        for reader in self._readers:
            reader.join(timeout=10)
        return rc, "".join(self.lines["stdout"]), "".join(self.lines["stderr"]), seconds


def plugin_run(gpuisolate, *args, on_line=None):
    return Run(["kubectl", "gpuisolate", *args], gpuisolate.env(), on_line)


class Once:
    """Calls ``action`` in its own thread the first time ``when(stream, line)`` holds."""

    def __init__(self, when, action):
        self.when, self.action = when, action
        self.fired = threading.Event()
        self.thread = None
        self.error = None

    def __call__(self, stream, line):
        if not self.fired.is_set() and self.when(stream, line):
            self.fired.set()
            self.thread = threading.Thread(target=self._run, daemon=True)
            self.thread.start()

    def _run(self):
        try:
            self.action()
        except Exception as exc:       # reported by join()
            self.error = exc

    def join(self, timeout=180):
        assert self.fired.is_set(), "the fault was never triggered"
        self.thread.join(timeout)
        if self.error:
            raise self.error


class Watched:
    """One evacuation watched from the cluster's side: a snapshot before, the PDB monitor armed
    for its whole run, and the audit log's evictions from its start."""

    def __init__(self, sandbox, control_plane):
        self.admin = Admin(sandbox.dir)
        self.control_plane = control_plane
        self.monitor = PdbMonitor(self.admin).start()
        self.before = self.snapshot()
        self.armed = self.monitor.arm()
        self.mark = audit.mark(control_plane.audit_log())

    def snapshot(self):
        return {"nodes": self.admin.nodes(), "pods": self.admin.pods(),
                "localClaims": self.admin.local_claims()}

    def finish(self):
        """(PDB violations, PDB checks made, the run's evictions from the audit log)."""
        violations, checks = self.monitor.disarm()
        self.monitor.stop()
        return violations, checks, audit.evictions(self.control_plane.audit_log(), self.mark)

    def check(self, args, result, targets=(GPU_A,)):
        """The soak's invariants of one evacuate run (``result``: rc, stdout, stderr): its exit
        code and JSON summary against the cluster afterwards, protected and untargeted pods kept,
        GPU taints unchanged, no cordon, no PDB below its minimum, a one-line error."""
        rc, out, err = result
        violations, checks, evictions = self.finish()
        values = {n: gpu_value(self.before["nodes"][n]) for n in GPU_NODES}
        spec = Spec(0, "evacuate", list(GPU_NODES), list(args), values, targets=tuple(targets))
        checker = Checker(spec, self.before, self.snapshot(), rc, out, err)
        checker.common(violations, checks, None)
        checker.evacuate()
        return checker, evictions


def ours(evictions):
    """The evictions the plugin sent (by its User-Agent)."""
    return [e for e in evictions if e.user_agent.startswith(PLUGIN_AGENT)]
