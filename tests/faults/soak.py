"""The soak (driven by scripts/soak): seeded taint, untaint and evacuate runs of
the plugin through the fault proxy while a concurrent writer changes the nodes
and a monitor watches every PodDisruptionBudget; after each run the invariants
of checks.py are checked against the real API server.

Run ``seed`` is a function of the seed alone: the operation (``OPS[seed %
len(OPS)]``), its flags, the GPU taint on each node before it, the credentials
(token or client certificate through the proxy), the proxy's fault schedule and
the writer's changes.  An evacuate run starts from the seed placement
(``scripts/sandbox reset`` when an earlier run moved pods) plus the soak's own
workloads: a 4-replica Deployment preferring the GPU nodes under a
minAvailable-3 PDB, a mirror pod and a pod that tolerates the GPU taint."""

import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .checks import Checker, gpu_value
from .cluster import MIRROR, ROOT, Admin, ApiError, ready, wait_for
from .monitor import PdbMonitor
from .pki import token
from .proxy import FaultProxy
from .writer import Writer

OPS = ("taint", "evacuate", "untaint", "taint", "untaint")
NOT_FAULTS = ("requests", "upstream-409", "upstream-error")     # counted by the proxy, not injected
SOAK_NS = "soak-"


@dataclass
class Spec:
    seed: int
    op: str
    gpu: list
    args: list
    initial: dict
    targets: tuple = ()
    overwrite: bool = False
    dry_run: str = "none"
    taint_first: bool = False
    context: str = "proxy-token"


@dataclass
class Outcome:
    spec: Spec
    rc: int
    seconds: float
    faults: Counter
    counts: Counter
    failures: list = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""


def plan(seed, gpu, request_timeout):
    """The run of this seed (pure: the same seed gives the same run)."""
    rng = random.Random(seed)
    op = OPS[seed % len(OPS)]
    spec = Spec(seed, op, list(gpu), [], {}, context=rng.choice(["proxy-token", "proxy-cert"]))
    if op in ("taint", "untaint"):
        spec.initial = {n: rng.choices([None, "true", "present"], [45, 45, 10])[0] for n in gpu}
        spec.dry_run = rng.choices(["none", "server"], [85, 15])[0]
        spec.overwrite = op == "taint" and rng.random() < 0.3
        spec.args = [op] + (["--overwrite"] if spec.overwrite else [])
    else:
        spec.targets = tuple(gpu) if rng.random() < 0.6 else (rng.choice(gpu),)
        spec.taint_first = rng.random() < 0.5
        spec.initial = {n: (rng.choice([None, "true"]) if spec.taint_first else "true") for n in gpu}
        if not spec.taint_first and rng.random() < 0.15:
            spec.initial[rng.choice(spec.targets)] = None          # refused by the preflight
        spec.dry_run = rng.choices(["none", "server"], [75, 25])[0]
        names = list(spec.targets) if len(spec.targets) == 1 else []
        spec.args = ["evacuate", *names, "--delete-emptydir-data", "-o", "json", "--timeout", "90s",
                     "--parallel-nodes", str(rng.choice([1, 2])),
                     "--max-parallel", str(rng.choice([1, 2, 4, 8]))]
        spec.args += ["--taint-first"] if spec.taint_first else []
    if spec.dry_run != "none":
        spec.args.append(f"--dry-run={spec.dry_run}")
    spec.args += ["--request-timeout", f"{request_timeout:g}s", "--context", spec.context]
    return spec


class Soak:
    def __init__(self, sandbox_dir, workdir, *, rate=0.12, request_timeout=2.0, log=print):
        self.sandbox_dir, self.workdir = Path(sandbox_dir), Path(workdir)
        self.rate, self.request_timeout, self.log = rate, request_timeout, log
        self.admin = Admin(sandbox_dir)
        self.proxy = FaultProxy(self.admin.server, self.admin.pki, self.workdir, rate=rate,
                                stall=request_timeout + 1.5).start()
        self.kubeconfig = self.proxy.kubeconfig(self.workdir / "kubeconfig", token(self.admin.pki),
                                                (self.admin.pki / "admin.crt", self.admin.pki / "admin.key"))
        self.monitor = PdbMonitor(self.admin).start()
        self.gpu = self.admin.gpu_nodes()
        self.all_nodes = sorted(self.admin.nodes())
        self.dirty = True
        self.timings = Counter()

    def close(self):
        self.monitor.stop()
        self.proxy.stop()

    # -- preparing a run ------------------------------------------------------------------------
    def reset(self):
        started = time.monotonic()
        env = dict(os.environ, SANDBOX_DIR=str(self.sandbox_dir))
        result = subprocess.run([str(ROOT / "scripts" / "sandbox"), "reset"], env=env,
                                capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            raise RuntimeError(f"scripts/sandbox reset failed: {result.stderr.strip()}")
        wait_for("the soak namespaces of earlier runs to be gone", lambda: not [
            ns for ns in self.admin.kube.list("namespaces") if ns["metadata"]["name"].startswith(SOAK_NS)])
        self.timings["reset"] += time.monotonic() - started
        self.dirty = False

    def workloads(self, seed):
        """The soak's own pods on the GPU nodes (see the module docstring)."""
        started = time.monotonic()
        ns, kube = f"{SOAK_NS}{seed}", self.admin.kube
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        container = [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}]
        prefer_gpu = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "preference": {"matchExpressions": [
                {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]}}]}}
        gpu_toleration = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        for name, replicas, extra in (
                ("quorum", 4, {"affinity": prefer_gpu}),
                ("tolerant", 1, {"tolerations": gpu_toleration,
                                 "nodeSelector": {"kubernetes.io/hostname": self.gpu[-1]}})):
            kube.create({"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": name, "namespace": ns},
                         "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                                  "template": {"metadata": {"labels": {"app": name}},
                                               "spec": {"containers": container,
                                                        "terminationGracePeriodSeconds": 0, **extra}}}})
        kube.create({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "static-web", "namespace": ns, "annotations": {MIRROR: "soak"}},
                     "spec": {"nodeName": self.gpu[0], "containers": container}})
        kube.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": "quorum", "namespace": ns},
                     "spec": {"minAvailable": 3, "selector": {"matchLabels": {"app": "quorum"}}}})
        wait_for(f"the soak workloads in {ns}", lambda: sum(map(ready, kube.list("pods", ns))) == 6)
        wait_for("the quorum PDB",
                 lambda: (kube.get("poddisruptionbudgets", "quorum", ns).get("status") or {})
                 .get("disruptionsAllowed") == 1)
        self.timings["workloads"] += time.monotonic() - started

    def set_gpu_taints(self, initial):
        for name, value in initial.items():
            for _ in range(20):
                node = self.admin.kube.get("nodes", name)
                if gpu_value(node) == value:
                    break
                taints = [t for t in node["spec"].get("taints") or ()
                          if not (t["key"] == "nvidia.com/gpu" and t["effect"] == "NoSchedule")]
                if value is not None:
                    taints.append({"key": "nvidia.com/gpu", "value": value, "effect": "NoSchedule"})
                try:
                    self.admin.kube.patch("nodes", name, {
                        "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                        "spec": {"taints": taints or None}})
                    break
                except ApiError as exc:
                    if exc.status != 409:
                        raise

    def snapshot(self):
        return {"nodes": self.admin.nodes(), "pods": self.admin.pods(),
                "localClaims": self.admin.local_claims()}

    # -- one run ----------------------------------------------------------------------------------
    def run(self, seed):
        spec = plan(seed, self.gpu, self.request_timeout)
        if spec.op == "evacuate" and self.dirty:
            self.reset()
            self.workloads(seed)
        self.set_gpu_taints(spec.initial)
        before = self.snapshot()
        faults_before = Counter(self.proxy.stats())
        self.proxy.reseed(seed)
        self.monitor.arm()
        writer = Writer(self.admin.kube, self.gpu + [n for n in self.all_nodes if n not in self.gpu][:1],
                        seed).start()
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        env.update(PYTHONPATH=str(ROOT), KUBECONFIG=self.kubeconfig)
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "kubectl_gpuisolate", *spec.args], env=env,
                              capture_output=True, text=True, timeout=900)
        seconds = time.monotonic() - started
        writer.stop()
        violations, pdb_checks = self.monitor.disarm()
        after = self.snapshot()
        if spec.op == "evacuate" and spec.dry_run == "none":
            self.dirty = True
        faults = Counter(self.proxy.stats()) - faults_before
        checker = Checker(spec, before, after, proc.returncode, proc.stdout, proc.stderr)
        checker.common(violations, pdb_checks, writer)
        getattr(checker, spec.op)()
        checker.check("through-the-proxy", faults["requests"] > 0, "no request reached the proxy")
        self.timings["plugin"] += seconds
        return Outcome(spec, proc.returncode, seconds, faults, checker.counts, checker.failures,
                       proc.stdout, proc.stderr)


def describe(outcome):
    spec = outcome.spec
    injected = ",".join(f"{k}={v}" for k, v in sorted(outcome.faults.items()) if k not in NOT_FAULTS)
    return (f"seed {spec.seed}: {' '.join(spec.args[:-4])} [{spec.context}] -> exit {outcome.rc} "
            f"in {outcome.seconds:.1f}s; {outcome.faults['requests']} requests, faults: {injected or 'none'}")


def report(outcome):
    """The text printed for a failed run: what failed, the output, and how to replay it."""
    lines = [f"FAILED {describe(outcome)}"] + [f"  - {f}" for f in outcome.failures]
    lines += [f"  initial GPU taints: {json.dumps(outcome.spec.initial)}",
              "  stdout: " + outcome.stdout[-1500:].replace("\n", "\n    "),
              "  stderr: " + outcome.stderr[-3000:].replace("\n", "\n    "),
              f"  replay: scripts/soak --seed {outcome.spec.seed} --runs 1"]
    return "\n".join(lines)
