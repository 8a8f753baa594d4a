"""The in-cluster configuration, end to end: the plugin run as a process of a pod.

With no kubeconfig anywhere (no --kubeconfig, no KUBECONFIG, an empty HOME) and
KUBERNETES_SERVICE_HOST/PORT set, the plugin must use the pod's service account, the files
/var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt,namespace}.  Here the account is a
real ServiceAccount of the sandbox bound to the shipped ClusterRole (rbac/clusterrole.yaml), its
token minted by the TokenRequest API, and its files are laid on a tmpfs inside a private mount
namespace made for each run of the plugin: the machine's own /var/run/secrets is never written
(checked after every run), and the mount never shows outside that namespace.

Requires root (mount(2) in a new mount namespace) and util-linux's `unshare` on PATH; CI runs
as root.  Without either, every test here FAILS saying so; none is ever skipped.
"""

import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from plugin import REPO
from sandbox_helpers import wait_until

ROLE_FILE = Path(REPO) / "rbac" / "clusterrole.yaml"
NAMESPACE = "gpuisolate-e2e-incluster"
ACCOUNT = "gpuisolate-incluster"                   # bound to the shipped ClusterRole
LACKING = "gpuisolate-incluster-no-pdbs"           # bound to the shipped rules less REMOVED
REMOVED = ("list", "policy", "poddisruptionbudgets")   # a rule of the role file that status needs
SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
HOST_SECRETS = SA_DIR.parent.parent                # /var/run/secrets
MOUNT_TAG = "gpuisolate-e2e-incluster"             # the tmpfs's source, to find it in mountinfo
SETUP_FAILED = 97
GPU_SELECTOR = "nvidia.com/gpu.present=true"

# Runs in the new mount namespace: a tmpfs on BASE (the nearest existing directory on the way
# to the service-account directory, as a mount point must exist), the pod's files copied onto
# it, then the plugin.
IN_POD = """
tag=$1 base=$2 sa_dir=$3 stage=$4; shift 4
mount -t tmpfs -o size=1m,mode=0755 "$tag" "$base" && mkdir -p "$sa_dir" &&
  cp -R "$stage"/. "$sa_dir"/ || exit 97
exec "$@"
"""


@pytest.fixture(scope="session")
def unshare_bin():
    """util-linux's unshare, as root; a failure (never a skip) otherwise."""
    problems = []
    if os.geteuid() != 0:
        problems.append(f"this process is not root (euid {os.geteuid()})")
    path = shutil.which("unshare")
    if not path:
        problems.append("`unshare` (util-linux) is not on PATH")
    if problems:
        pytest.fail("the in-cluster e2e tests run the plugin in a private mount namespace and need "
                    "root and util-linux's unshare: " + "; ".join(problems), pytrace=False)
    return path


def mount_base():
    """The deepest existing directory on the way to SA_DIR (SA_DIR itself in a real pod)."""
    path = SA_DIR
    while not path.is_dir():
        path = path.parent
    base = Path(os.path.realpath(path))
    assert base != Path("/"), f"no directory on the way to {SA_DIR} but /: refusing to hide /"
    return base


def host_state():
    """What a run must leave as it was: the machine's /var/run/secrets, and our mounts."""
    files = None
    if os.path.lexists(HOST_SECRETS):
        files = sorted((str(p), p.lstat().st_mtime_ns, p.lstat().st_size)
                       for p in [HOST_SECRETS, *HOST_SECRETS.rglob("*")])
    mounts = [line for line in Path("/proc/self/mountinfo").read_text().splitlines()
              if MOUNT_TAG in line]
    return files, mounts


class Hidden(dict):
    """A dict of credentials: pytest shows the arguments of a failing frame by their repr."""

    def __repr__(self):
        return f"<{', '.join(self)}: values hidden>"


def one_line_error(result, code, *needles):
    lines = result.stderr.strip().splitlines()
    assert result.returncode == code, (result.returncode, result.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


class Pod:
    """Runs ``python -m kubectl_gpuisolate`` as a pod's process, with given service-account files."""

    def __init__(self, unshare, root, port, ca, never_printed):
        self.unshare, self.root, self.port, self.ca = unshare, root, port, ca
        self.never_printed = list(never_printed)
        self.home = root / "home"
        self.home.mkdir()
        self.base = mount_base()
        for path in (root, Path(REPO), Path(sys.executable)):
            assert self.base not in Path(os.path.realpath(path)).parents, \
                f"{path} lies under {self.base}, which the tmpfs hides in the pod's namespace"
        self.runs = 0

    def files(self, token=None):
        """The pod's service-account files; no token file when ``token`` is None."""
        files = Hidden({"ca.crt": self.ca, "namespace": NAMESPACE})
        if token is not None:
            files["token"] = token           # as the kubelet writes it: no newline
        return files

    def env(self):
        # Only what a container has: no KUBECONFIG, an empty HOME, the service's host and port.
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
                "LANG": "C.UTF-8", "PYTHONPATH": REPO,
                "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(self.port)}

    def __call__(self, files, *args):
        # Out of pytest's tracebacks: they show a failing frame's variables, tokens among them.
        __tracebackhide__ = True
        self.runs += 1
        stage = self.root / f"stage-{self.runs}"
        stage.mkdir()
        for name, text in files.items():
            (stage / name).write_text(text)
        assert not any(self.home.iterdir()), "HOME must stay empty: no ~/.kube/config"
        before = host_state()
        result = subprocess.run(
            [self.unshare, "--mount", "--propagation", "private", "/bin/sh", "-c", IN_POD, "in-pod",
             MOUNT_TAG, str(self.base), str(SA_DIR), str(stage),
             sys.executable, "-m", "kubectl_gpuisolate", *args],
            capture_output=True, text=True, timeout=180, env=self.env(), cwd=str(self.home))
        assert result.returncode != SETUP_FAILED, \
            f"could not lay the service-account files in a private mount namespace: {result.stderr}"
        after = host_state()
        assert after == before and not after[1], (before, after)
        # A bare bool: pytest would print both sides of an ``in``.
        tokens = [t for t in self.never_printed + [files.get("token", "").strip()] if t]
        leaked = any(token in result.stdout + result.stderr for token in tokens)
        assert not leaked, f"a token was printed (exit {result.returncode})"
        return result


def shipped():
    return yaml.safe_load(ROLE_FILE.read_text())


def without(rules, removed):
    verb, group, resource = removed
    kept = [dict(r, verbs=[v for v in r["verbs"] if not (v == verb and group in r["apiGroups"]
                                                         and resource in r["resources"])])
            for r in rules]
    assert kept != rules, f"{removed} is not a rule of {ROLE_FILE}"
    return [r for r in kept if r["verbs"]]


def objects(role_name):
    def binding(account, role):
        return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": f"{NAMESPACE}-{account}"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]}
    accounts = [{"apiVersion": "v1", "kind": "ServiceAccount",
                 "metadata": {"name": name, "namespace": NAMESPACE}} for name in (ACCOUNT, LACKING)]
    lacking_role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": {"name": f"{NAMESPACE}-{LACKING}"},
                    "rules": without(shipped()["rules"], REMOVED)}
    return accounts + [lacking_role, binding(ACCOUNT, role_name),
                       binding(LACKING, lacking_role["metadata"]["name"])]


def delete_all(sandbox, wait):
    names = [f"{NAMESPACE}-{ACCOUNT}", f"{NAMESPACE}-{LACKING}"]
    sandbox.kubectl("delete", "clusterrolebinding", *names, "--ignore-not-found", check=False)
    sandbox.kubectl("delete", "clusterrole", names[1], "--ignore-not-found", check=False)
    sandbox.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", f"--wait={wait}",
                    check=False)


def can_i(sandbox, verb, resource, account):
    result = sandbox.kubectl("auth", "can-i", verb, resource,
                             f"--as=system:serviceaccount:{NAMESPACE}:{account}", check=False)
    return result.stdout.strip() == "yes"


@pytest.fixture(scope="module")
def cluster(unshare_bin, sandbox, tmp_path_factory):
    """The two ServiceAccounts, their bindings and tokens, and a Pod runner; removed afterwards."""
    sandbox.reset()                      # taints of earlier tests; also drops our namespace if left
    delete_all(sandbox, wait=True)
    sandbox.kubectl("apply", "-f", str(ROLE_FILE))
    sandbox.kubectl("create", "namespace", NAMESPACE)
    sandbox.kubectl("apply", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": objects(shipped()["metadata"]["name"])}))
    try:
        wait_until("the ServiceAccounts' bindings to take effect", lambda: all(
            can_i(sandbox, "list", "nodes", a) and can_i(sandbox, "get", "daemonsets", a)
            for a in (ACCOUNT, LACKING)))
        tokens = Hidden({a: sandbox.kubectl("create", "token", a, "-n", NAMESPACE,
                                            "--duration=10m").stdout.strip()
                         for a in (ACCOUNT, LACKING)})
        state = json.loads((sandbox.dir / "state.json").read_text())
        port = int(state["server"].rsplit(":", 1)[1])
        ca = (sandbox.dir / "pki" / "ca.crt").read_text()
        pod = Pod(unshare_bin, tmp_path_factory.mktemp("in-cluster"), port, ca, tokens.values())
        yield {"pod": pod, "tokens": tokens, "sandbox": sandbox}
    finally:
        delete_all(sandbox, wait=False)


def gpu_node_versions(sandbox):
    nodes = sandbox.get_json("nodes", "-l", GPU_SELECTOR)["items"]
    return {n["metadata"]["name"]: (n["metadata"]["resourceVersion"], n["spec"].get("taints"))
            for n in nodes}


def test_status_lists_the_gpu_nodes(cluster):
    pod, sandbox = cluster["pod"], cluster["sandbox"]
    result = pod(pod.files(cluster["tokens"][ACCOUNT]), "status", "-o", "json")
    assert result.returncode == 0, result.stderr
    listed = [n["name"] for n in json.loads(result.stdout)["nodes"]]
    expected = sandbox.kubectl("get", "nodes", "-l", GPU_SELECTOR,
                               "-o", "jsonpath={.items[*].metadata.name}").stdout.split()
    assert expected and sorted(listed) == sorted(expected)


def test_a_server_dry_run_taint_is_allowed_and_changes_nothing(cluster):
    """The ServiceAccount may patch nodes: the server accepts the dry run as that identity."""
    pod, sandbox = cluster["pod"], cluster["sandbox"]
    before = gpu_node_versions(sandbox)
    result = pod(pod.files(cluster["tokens"][ACCOUNT]), "taint", "--dry-run=server")
    assert result.returncode == 0, result.stderr
    assert before and all(name in result.stdout for name in before), result.stdout
    assert gpu_node_versions(sandbox) == before


def test_calls_the_role_does_not_grant_fail_naming_the_account(cluster):
    pod = cluster["pod"]
    verb, _, resource = REMOVED
    lacking = pod(pod.files(cluster["tokens"][LACKING]), "status")
    one_line_error(lacking, 5, f'cannot {verb} resource "{resource}"',
                   f"system:serviceaccount:{NAMESPACE}:{LACKING}")
    # Impersonation is in no rule of the shipped role.
    impersonating = pod(pod.files(cluster["tokens"][ACCOUNT]), "status", "--as", "someone-else")
    one_line_error(impersonating, 5, 'cannot impersonate resource "users"',
                   f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}")


def test_a_garbage_token_fails_in_one_line_with_exit_5(cluster):
    pod = cluster["pod"]
    garbage = "gpuisolate-e2e-garbage-" + secrets.token_hex(16)
    result = pod(pod.files(garbage), "status")        # the runner checks it is never printed
    one_line_error(result, 5, "Unauthorized")


def test_a_missing_token_file_fails_in_one_line_with_exit_3(cluster):
    pod = cluster["pod"]
    result = pod(pod.files(token=None), "status")
    one_line_error(result, 3)
    assert "token" in result.stderr.lower(), result.stderr


def test_a_token_file_ending_in_a_newline_works(cluster):
    """As written by `kubectl create token > token`: client-go trims it, so must the plugin
    (a newline in the header once made an internal error that printed the token)."""
    pod = cluster["pod"]
    result = pod(pod.files(cluster["tokens"][ACCOUNT] + "\n"), "status", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["nodes"], result.stdout
