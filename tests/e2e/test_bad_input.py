"""Bad input, table-driven: every case gives ONE line on stderr that starts with
'error:' and names what to fix, the README's exit code, no traceback, and leaves
the cluster as it was (node resourceVersions and pod UIDs compared before and
after each case).  Flags and arguments, taint syntax, selectors, kubeconfig
problems, server problems, missing nodes, no GPU nodes, an old interpreter."""

import json
import os
import sys
from pathlib import Path

import pytest
from plugin import REPO
from sandbox_helpers import GPU_A, unanswering_servers

sys.path.insert(0, str(Path(REPO) / "tests"))
from faults import pki  # noqa: E402
from faults.cluster import Admin  # noqa: E402

PY38 = "/root/.pyenv/versions/3.8.18/bin/python"


class Env:
    """What the cases build on: the admin kubeconfig entries, files, servers."""

    def __init__(self, sandbox, tmp_path, silent_port, closed_port):
        self.sandbox, self.tmp = sandbox, tmp_path
        self.silent_port, self.closed_port = silent_port, closed_port
        self.pki = Path(sandbox.dir) / "pki"
        self.server = json.loads((Path(sandbox.dir) / "state.json").read_text())["server"]

    def kubeconfig(self, user=None, *, server=None, cluster=None, name="kubeconfig"):
        user = user or {"client-certificate": self.pki / "admin.crt", "client-key": self.pki / "admin.key"}
        path = pki.kubeconfig(self.tmp / name, server or self.server, self.pki / "ca.crt", {"u": user})
        if cluster:
            config = json.loads(Path(path).read_text())
            config["clusters"][0]["cluster"].update(cluster)
            Path(path).write_text(json.dumps(config))
        return ["--kubeconfig", path]

    def file(self, name, text, mode=0o644):
        path = self.tmp / name
        path.write_text(text)
        path.chmod(mode)
        return str(path)

    def exec_user(self, script):
        command = self.file("credential-helper", "#!/bin/sh\n" + script, 0o755)
        return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": command,
                         "interactiveMode": "Never"}}


def _kc(**kw):
    return lambda env: env.kubeconfig(**kw)


def _expired(env):
    crt, key = pki.client_cert(env.pki, env.tmp, "expired", "/O=system:masters/CN=expired-admin",
                               start="20200101000000Z", end="20200102000000Z")
    return env.kubeconfig({"client-certificate": crt, "client-key": key})


def _mismatched(env):
    crt, _ = pki.client_cert(env.pki, env.tmp, "other", "/CN=other")
    return env.kubeconfig({"client-certificate": crt, "client-key": env.pki / "admin.key"})


def _wrong_ca(env):
    crt, _ = pki.server_cert(env.pki, env.tmp, "not-a-ca")     # a leaf, not the sandbox CA
    return env.kubeconfig(cluster={"certificate-authority": str(crt)})


def _yaml(text):
    return lambda env: ["--kubeconfig", env.file("kubeconfig", text)]


def _no_kubeconfig(env):
    home = env.tmp / "home"
    home.mkdir()
    return [], {"KUBECONFIG": "", "HOME": str(home)}


def _unreadable_token(env):
    path = env.tmp / "token-dir"          # a directory: unreadable as a file, even for root
    path.mkdir()
    return env.kubeconfig({"tokenFile": str(path)})


# (id, exit code, needles in the one line, args or a function(env) -> args or (args, env vars))
CASES = [
    # flags and arguments
    ("no-command", 2, ["COMMAND"], []),
    ("unknown-command", 2, ["invalid choice: 'frobnicate'"], ["frobnicate"]),
    ("unknown-flag", 2, ["--frobnicate"], ["status", "--frobnicate"]),
    ("bad-output", 2, ["'xml'"], ["status", "-o", "xml"]),
    ("bad-dry-run", 2, ["'maybe'"], ["taint", "--dry-run=maybe"]),
    ("zero-max-parallel", 2, ["--max-parallel must be at least 1"], ["evacuate", "--max-parallel", "0"]),
    ("zero-parallel-nodes", 2, ["--parallel-nodes must be at least 1"],
     ["evacuate", "--parallel-nodes", "0"]),
    ("negative-grace", 2, ["--grace-period"], ["evacuate", "--grace-period", "-5"]),
    ("non-integer-grace", 2, ["--grace-period", "'abc'"], ["evacuate", "--grace-period", "abc"]),
    ("bad-deadline", 2, ["--timeout", "'forever'"], ["evacuate", "--timeout", "forever"]),
    ("bad-request-timeout", 2, ["--request-timeout", "'soon'"], ["status", "--request-timeout", "soon"]),
    ("negative-request-timeout", 2, ["--request-timeout", "'-1s'"], ["status", "--request-timeout=-1s"]),
    ("names-and-selector", 2, ["both node names and --selector"], ["status", GPU_A, "-l", "a=b"]),
    ("as-group-without-as", 2, ["--as-group needs --as"], ["status", "--as-group", "system:masters"]),
    ("flag-without-value", 2, ["--kubeconfig", "expected one argument"], ["status", "--kubeconfig"]),
    # taint syntax
    ("taint-missing-effect", 2, ["missing effect"], ["taint", "--gpu-taint", "nvidia.com/gpu=true"]),
    ("taint-bad-effect", 2, ["invalid taint effect 'NoSchedul'"],
     ["taint", "--gpu-taint", "nvidia.com/gpu=true:NoSchedul"]),
    ("taint-empty-key", 2, ["the key is empty"], ["taint", "--gpu-taint", "=true:NoSchedule"]),
    ("taint-bad-key", 2, ["invalid taint key 'bad key!'"], ["taint", "--gpu-taint", "bad key!=x:NoSchedule"]),
    ("taint-bad-prefix", 2, ["lower-case DNS subdomain"],
     ["taint", "--gpu-taint", "Nvidia.COM/gpu=true:NoSchedule"]),
    ("taint-bad-value", 2, ["invalid taint value 'bad value'"],
     ["taint", "--gpu-taint", "nvidia.com/gpu=bad value:NoSchedule"]),
    ("taint-long-name", 2, ["1-63 characters"], ["taint", "--gpu-taint", "x/" + "a" * 64 + ":NoSchedule"]),
    ("taint-trailing-dash", 2, ["use 'untaint'"], ["taint", "--gpu-taint", "nvidia.com/gpu:NoSchedule-"]),
    ("untaint-with-value", 2, ["without a value"],
     ["untaint", "--gpu-taint", "nvidia.com/gpu=true:NoSchedule"]),
    ("untaint-bad-effect", 2, ["invalid taint effect 'Sometimes'"],
     ["untaint", "--gpu-taint", "nvidia.com/gpu:Sometimes"]),
    ("evacuate-taint-syntax", 2, ["missing effect"], ["evacuate", "--gpu-taint", "nvidia.com/gpu"]),
    ("status-taint-syntax", 2, ["missing effect"], ["status", "--gpu-taint", "nvidia.com/gpu=true"]),
    # selectors
    ("selector-in-without-parens", 2, ["invalid selector 'a in b'"], ["status", "-l", "a in b"]),
    ("selector-empty-key", 2, ["invalid selector '=x'"], ["status", "-l", "=x"]),
    ("selector-unclosed", 2, ["invalid selector 'a notin (x'"], ["status", "-l", "a notin (x"]),
    ("selector-bad-key", 2, ["'Bad.Key/x' is not a valid label key"], ["status", "-l", "Bad.Key/x=1"]),
    ("selector-bad-value", 2, ["is not a valid label value"], ["taint", "-l", "a=b$c"]),
    ("selector-gt-needs-int", 2, ["needs an integer"], ["status", "-l", "a>x"]),
    ("selector-bang-operator", 2, ["cannot parse '!a=b'", "KEY in (A,B)"], ["untaint", "-l", "!a=b"]),
    # kubeconfig problems
    ("kubeconfig-missing", 3, ["/nonexistent/kubeconfig not found", "--kubeconfig"],
     ["status", "--kubeconfig", "/nonexistent/kubeconfig"]),
    ("kubeconfig-no-file-at-all", 3, ["no kubeconfig found", "KUBECONFIG"], _no_kubeconfig),
    ("kubeconfig-malformed", 3, ["is not valid YAML at line", "fix or remove it"],
     _yaml("apiVersion: v1\nclusters: [unclosed\n")),
    ("kubeconfig-exec-not-a-mapping", 3, ['exec of user "u" must be a mapping'],
     lambda env: env.kubeconfig({"exec": "gcloud auth print-access-token"})),
    ("kubeconfig-user-not-a-mapping", 3, ['the user of users entry "u" must be a mapping'],
     _yaml("apiVersion: v1\ncurrent-context: c\nclusters: [{name: s, cluster: {server: 'https://127.0.0.1:1'}}]\n"
           "users: [{name: u, user: just-a-string}]\n"
           "contexts: [{name: c, context: {cluster: s, user: u}}]\n")),
    ("kubeconfig-not-a-mapping", 3, ["not a kubeconfig"], _yaml("- just\n- a list\n")),
    ("kubeconfig-unknown-context", 3, ['context "no-such-context" not found', "choose one of"],
     ["status", "--context", "no-such-context"]),
    ("kubeconfig-no-current-context", 3, ["no current context", "--context"],
     _yaml("apiVersion: v1\nkind: Config\nclusters: []\n")),
    ("kubeconfig-unknown-cluster", 3, ['cluster "nowhere"'], ["status", "--cluster", "nowhere"]),
    ("exec-plugin-fails", 3, ["failed with exit code 3", "run it by hand"],
     lambda env: env.kubeconfig(env.exec_user("echo 'login expired' >&2\nexit 3\n"))),
    ("exec-plugin-missing", 3, ["not found"],
     lambda env: env.kubeconfig({"exec": {"command": "gpuisolate-no-such-helper", "interactiveMode": "Never",
                                          "apiVersion": "client.authentication.k8s.io/v1"}})),
    ("exec-plugin-garbage", 3, ["printed no ExecCredential JSON"],
     lambda env: env.kubeconfig(env.exec_user("echo 'this is not JSON'\n"))),
    ("client-cert-expired", 3, ["expired on 2020-01-02", "renew it"], _expired),
    ("client-cert-file-missing", 3, ["unable to read client-cert /nonexistent.crt for u",
                                     "unable to read client-key /nonexistent.key for u"],
     lambda env: env.kubeconfig({"client-certificate": "/nonexistent.crt",
                                 "client-key": "/nonexistent.key"})),
    ("client-key-not-base64", 3, ["client-key-data in kubeconfig is not valid base64"],
     lambda env: env.kubeconfig({"client-certificate-data": "bm90IGEgY2VydA==", "client-key-data": "%%%"})),
    ("client-cert-and-key-mismatch", 3, ["matching PEM pair"], _mismatched),
    ("token-file-unreadable", 3, ["cannot read tokenFile"], _unreadable_token),
    ("server-bad-scheme", 3, ["must start with https:// or http://"], _kc(server="ftp://127.0.0.1:1")),
    # server problems
    ("server-refused", 4, ["cannot reach the API server", "connection refused"],
     lambda env: env.kubeconfig(server=f"https://127.0.0.1:{env.closed_port}")),
    ("server-timeout", 4, ["did not answer in time", "--request-timeout"],
     lambda env: env.kubeconfig(server=f"https://127.0.0.1:{env.silent_port}") + ["--request-timeout", "1s"]),
    ("server-tls-unknown-ca", 4, ["TLS verification", "certificate-authority"], _wrong_ca),
    ("server-tls-wrong-name", 4, ["TLS verification"],
     _kc(cluster={"tls-server-name": "not-the-apiserver.example"})),
    ("server-401", 5, ["Unauthorized", "refresh the credentials"],
     _kc(user={"token": "not-a-valid-token-e2e"})),
    ("server-403-rbac", 5, ['cannot list resource "nodes"', "gpuisolate-e2e-nobody"],
     ["status", "--as", "gpuisolate-e2e-nobody"]),
    ("server-403-impersonation", 5, ['cannot impersonate resource "users"'],
     ["status", "--context", "sandbox-operator", "--as", "someone-else"]),
    # nodes that do not exist, no GPU nodes
    ("status-missing-node", 6, ["no-such-node", "kubectl get nodes"], ["status", "no-such-node"]),
    ("taint-missing-node", 6, ["no-such-node"], ["taint", GPU_A, "no-such-node"]),
    ("untaint-missing-node", 6, ["no-such-node"], ["untaint", "no-such-node"]),
    ("evacuate-missing-node", 6, ["no-such-node"], ["evacuate", "no-such-node", "--taint-first"]),
    ("status-no-gpu-nodes", 6, ["no GPU nodes found", "-l/--selector"],
     ["status", "-l", "gpuisolate.example.com/none=true"]),
    ("evacuate-no-gpu-nodes", 6, ["no GPU nodes found"],
     ["evacuate", "--taint-first", "-l", "gpuisolate.example.com/none=true"]),
    # the interpreter
    ("python-3.8", 11, ["needs Python >= 3.9", "found 3.8"], "python3.8"),
]


@pytest.fixture(scope="module")
def servers():
    """(port that accepts and never answers, port where nothing listens), both on 127.0.0.1."""
    with unanswering_servers() as servers:
        yield servers.silent, servers.closed


def cluster_state(admin):
    nodes = {name: n["metadata"]["resourceVersion"] for name, n in admin.nodes().items()}
    return nodes, sorted(admin.pods())


def run_case(gpuisolate, env, spec):
    if spec == "python3.8":
        import subprocess
        assert os.access(PY38, os.X_OK), f"{PY38} is needed for the old-interpreter case"
        return subprocess.run([PY38, "-m", "kubectl_gpuisolate", "status"], capture_output=True,
                              text=True, env=gpuisolate.env(PYTHONPATH=REPO), timeout=60)
    extra = {}
    if callable(spec):
        spec = spec(env)
        if isinstance(spec, tuple):
            spec, extra = spec
        spec = ["status", *spec] if not spec or spec[0] == "--kubeconfig" else spec
    return gpuisolate(*spec, env=gpuisolate.env(**extra))


@pytest.mark.parametrize("code,needles,spec", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(gpuisolate, sandbox, tmp_path, servers, code, needles, spec):
    admin = Admin(sandbox.dir)
    before = cluster_state(admin)
    result = run_case(gpuisolate, Env(sandbox, tmp_path, *servers), spec)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == code, (result.returncode, result.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert result.stdout == ""
    assert cluster_state(admin) == before


def test_the_table_has_forty_distinct_cases():
    assert len({c[0] for c in CASES}) == len(CASES) >= 40
    assert len({json.dumps(c[3]) if not callable(c[3]) else c[0] for c in CASES}) == len(CASES)
    assert {c[1] for c in CASES} == {2, 3, 4, 5, 6, 11}
