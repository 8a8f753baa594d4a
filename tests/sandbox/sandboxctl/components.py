"""Command lines, start-up and health of the five sandbox components."""
import os
import ssl
import subprocess
import time
from pathlib import Path

from . import pki
from .procs import SandboxError, alive, http_ok, last_log_line, spawn

REPO = Path(__file__).resolve().parents[3]
BUILD = REPO / "tests" / "sandbox" / "build"
ROLE_FILE = REPO / "rbac" / "clusterrole.yaml"
KUBECTL = os.environ.get("SANDBOX_KUBECTL", "/usr/bin/kubectl")
ORDER = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"]
PORT_NAMES = ["etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"]
STAGES = ["node/fast/node-initialize.yaml", "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
          "pod/fast/pod-ready.yaml", "pod/fast/pod-complete.yaml", "pod/fast/pod-delete.yaml"]


def binaries(minor):
    """The cache directory with all binaries of Kubernetes `minor`; builds what is missing."""
    d = os.environ.get("SANDBOX_BIN_DIR")
    if not d:
        r = subprocess.run([str(BUILD), minor], stdout=subprocess.PIPE, text=True)
        if r.returncode != 0 or not r.stdout.strip():
            raise SandboxError("building the sandbox binaries failed (see the output above); "
                               "fix it and rerun `scripts/sandbox up`")
        d = r.stdout.strip().splitlines()[-1]
    missing = [b for b in ORDER if not os.access(os.path.join(d, b), os.X_OK)]
    missing += [s for s in STAGES if not os.path.exists(os.path.join(d, "stages", s))]
    if missing:
        raise SandboxError(f"missing in {d}: {', '.join(missing)}; run tests/sandbox/build")
    return d


def write_kwok_config(state, bindir, scale):
    parts = ["apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions:\n"
             f"  podPlayStageParallelism: {32 if scale else 8}\n"
             f"  nodePlayStageParallelism: {16 if scale else 4}\n"
             f"  nodeLeaseParallelism: {16 if scale else 4}\n"]
    for s in STAGES:
        parts.append(Path(bindir, "stages", s).read_text())
    path = state.root / "kwok.yaml"
    path.write_text("\n---\n".join(p.strip() + "\n" for p in parts))
    return path


# The API server's audit log records every Eviction (the request, with its UID precondition, and
# the answer) and nothing else: the tests count the evictions of each pod from it
# (tests/faults/audit.py), the judge a client's own log cannot be.
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Request
  verbs: ["create"]
  resources: [{group: "", resources: ["pods/eviction"]}]
- level: None
"""


def write_audit_policy(state):
    path = state.root / "audit-policy.yaml"
    path.write_text(AUDIT_POLICY)
    return path


def audit_log(state):
    return state.logs / "audit.log"


def argv(name, state, scale):
    p, k, root = state.data["ports"], state.pki, state.root
    kcfg = str(root / "components.kubeconfig")
    delegated = [f"--kubeconfig={kcfg}", f"--authentication-kubeconfig={kcfg}",
                 f"--authorization-kubeconfig={kcfg}", "--authentication-skip-lookup=true",
                 f"--client-ca-file={k / 'ca.crt'}", "--bind-address=127.0.0.1",
                 f"--secure-port={p[name] if name in p else 0}", "--leader-elect=false"]
    if name == "etcd":
        peer = f"http://127.0.0.1:{p['etcd-peer']}"
        client = f"http://127.0.0.1:{p['etcd']}"
        return ["--name=sandbox", f"--data-dir={root / 'etcd'}", f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}", f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}", f"--initial-cluster=sandbox={peer}",
                "--unsafe-no-fsync=true", "--quota-backend-bytes=8589934592",
                "--auto-compaction-mode=periodic", "--auto-compaction-retention=5m",
                "--snapshot-count=50000", "--log-level=warn"]
    if name == "kube-apiserver":
        return [f"--etcd-servers=http://127.0.0.1:{p['etcd']}", "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1", f"--secure-port={p[name]}",
                f"--tls-cert-file={k / 'apiserver.crt'}", f"--tls-private-key-file={k / 'apiserver.key'}",
                f"--client-ca-file={k / 'ca.crt'}", f"--token-auth-file={k / 'tokens.csv'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={k / 'sa.pub'}",
                f"--service-account-signing-key-file={k / 'sa.key'}",
                "--service-cluster-ip-range=10.96.0.0/16", "--authorization-mode=Node,RBAC",
                # scale: nodes are created Ready, so skip the initial not-ready taint that the
                # controller-manager would otherwise remove from 2,000 nodes one by one.
                "--disable-admission-plugins=ServiceAccount" + (",TaintNodesByCondition" if scale else ""),
                "--endpoint-reconciler-type=none",
                "--allow-privileged=true", "--enable-priority-and-fairness=false",
                "--max-requests-inflight=3000", "--max-mutating-requests-inflight=1500",
                "--event-ttl=30m", "--profiling=false", "--v=0",
                f"--audit-policy-file={root / 'audit-policy.yaml'}", f"--audit-log-path={audit_log(state)}",
                "--audit-log-format=json", "--audit-log-maxbackup=1", "--audit-log-maxsize=200"]
    if name == "kube-controller-manager":
        qps = ["--kube-api-qps=1000", "--kube-api-burst=2000"] if scale else \
              ["--kube-api-qps=200", "--kube-api-burst=400"]
        # After an API server restart (tests/e2e/test_control_plane_faults.py) this controller
        # sees the nodes' lease renewals only ~40 s later; with the default 40 s grace it would
        # mark every node NotReady and so every pod unready, a disruption of nobody's making.
        grace = "240s" if scale else "120s"
        return delegated + qps + [
            f"--root-ca-file={k / 'ca.crt'}", f"--service-account-private-key-file={k / 'sa.key'}",
            "--use-service-account-credentials=false", "--node-monitor-period=5s",
            f"--node-monitor-grace-period={grace}", "--concurrent-deployment-syncs=10",
            "--concurrent-replicaset-syncs=10", "--concurrent-statefulset-syncs=10",
            "--concurrent-gc-syncs=40", "--v=0"] + (
            # The DaemonSet controller's concurrency became a flag in 1.32.
            ["--concurrent-daemonset-syncs=4"] if _minor(state) >= (1, 32) else [])
    if name == "kube-scheduler":
        return delegated + ["--v=0"]
    if name == "kwok":
        return [f"--kubeconfig={kcfg}", f"--config={root / 'kwok.yaml'}", "--manage-all-nodes=true",
                f"--node-lease-duration-seconds={200 if scale else 40}", "--cidr=10.128.0.1/12", "--v=WARN",
                "--node-ip=127.0.0.1", f"--server-address=127.0.0.1:{p['kwok']}"]
    raise ValueError(name)


def _minor(state):
    return tuple(int(x) for x in state.data.get("k8s_version", "1.33").split("."))


def api_context(state):
    ctx = ssl.create_default_context(cafile=str(state.pki / "ca.crt"))
    ctx.load_cert_chain(str(state.pki / "admin.crt"), str(state.pki / "admin.key"))
    return ctx


def healthy(state, name):
    p = state.data.get("ports", {})
    if name == "etcd":
        return http_ok(f"http://127.0.0.1:{p['etcd']}/health")
    if name == "kube-apiserver":
        return http_ok(f"https://127.0.0.1:{p[name]}/readyz", api_context(state))
    if name in ("kube-controller-manager", "kube-scheduler"):
        return http_ok(f"https://127.0.0.1:{p[name]}/healthz")
    if name == "kwok":
        return http_ok(f"http://127.0.0.1:{p['kwok']}/healthz")
    return False


def endpoint(state, name):
    p = state.data.get("ports", {})
    scheme = "http" if name in ("etcd", "kwok") else "https"
    return f"{scheme}://127.0.0.1:{p.get(name)}" if name in p else ""


def start(state, name, scale, timeout=120):
    exe = os.path.join(state.data["bin"], name)
    rec = spawn(state, name, exe, argv(name, state, scale))
    deadline = time.time() + timeout
    while time.time() < deadline:
        if healthy(state, name):
            return rec
        if not alive(rec):
            raise SandboxError(f"{name} exited during start-up: {last_log_line(rec)} (log: {rec['log']})")
        time.sleep(0.2)
    raise SandboxError(f"{name} not healthy after {timeout}s (log: {rec['log']})")


def kubectl(state, *args, context="sandbox-admin", check=True):
    r = subprocess.run([KUBECTL, f"--kubeconfig={state.kubeconfig}", f"--context={context}", *args],
                       capture_output=True, text=True)
    if check and r.returncode != 0:
        msg = (r.stderr.strip().splitlines() or ["?"])[-1]
        raise SandboxError(f"kubectl {args[0]} failed: {msg}")
    return r


def apply_rbac(state, kube):
    """Load the plugin's ClusterRole from rbac/clusterrole.yaml and bind the operator user."""
    kubectl(state, "apply", "-f", str(ROLE_FILE))
    role = kubectl(state, "create", "--dry-run=client", "-o", "jsonpath={.metadata.name}",
                   "-f", str(ROLE_FILE)).stdout.strip()
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": pki.OPERATOR_USER},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                             "name": pki.OPERATOR_USER}]}
    cur = kube.get_or_none("clusterrolebindings", pki.OPERATOR_USER)
    if cur is not None and cur["roleRef"]["name"] != role:
        kube.delete("clusterrolebindings", pki.OPERATOR_USER)
        cur = None
    if cur is None:
        kube.create(binding, exist_ok=True)
