"""Every failure is one line on stderr that says what to fix, with the
documented exit code, no traceback, and no change to the cluster."""

import base64
import json
import os
import socket
import subprocess
import threading

import pytest

from plugin import gpuisolate, plugin_bin  # noqa: F401  (fixtures)

LIMITED_USER = "gpuisolate-e2e-limited"


def one_line_error(result, code, *needles):
    lines = result.stderr.strip().splitlines()
    assert result.returncode == code, (result.returncode, result.stderr)
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def admin_config(sandbox):
    raw = sandbox.kubectl("config", "view", "--raw", "--minify", "--context", "sandbox-admin",
                          "-o", "json").stdout
    return json.loads(raw)


def write_config(tmp_path, config, name="kubeconfig"):
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return str(path)


@pytest.fixture
def silent_server():
    """A TCP server on 127.0.0.1 that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except socket.timeout:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


@pytest.mark.parametrize("args,code,needle", [
    (["taint", "--taint", "nvidia.com/gpu=true"], 2, "missing effect"),
    (["taint", "--taint", "nvidia.com/gpu=true:NoSchedul"], 2, "invalid taint effect"),
    (["status", "-l", "a in b"], 2, "invalid selector"),
    (["status", "--context", "no-such-context"], 3, 'context "no-such-context" not found'),
    (["status", "--kubeconfig", "/nonexistent/kubeconfig"], 3, "/nonexistent/kubeconfig not found"),
    (["status", "no-such-node"], 6, "no-such-node"),
    (["status", "-l", "gpuisolate.example.com/none=true"], 6, "no GPU nodes found"),
    (["status", "--request-timeout", "soon"], 2, "--request-timeout"),
], ids=["malformed-taint", "invalid-effect", "invalid-selector", "unknown-context",
        "missing-kubeconfig", "missing-node", "no-gpu-nodes", "bad-timeout"])
def test_bad_input(gpuisolate, args, code, needle):
    one_line_error(gpuisolate(*args), code, needle)


def test_refused_connection(gpuisolate, sandbox, tmp_path):
    config = admin_config(sandbox)
    with socket.socket() as probe:          # a port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    result = gpuisolate("status", "--kubeconfig", write_config(tmp_path, config))
    one_line_error(result, 4, "cannot reach the API server", "connection refused")


def test_timeout(gpuisolate, sandbox, tmp_path, silent_server):
    config = admin_config(sandbox)
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{silent_server}"
    result = gpuisolate("status", "--kubeconfig", write_config(tmp_path, config),
                        "--request-timeout", "1s")
    one_line_error(result, 4, "did not answer in time", "--request-timeout")


def test_tls_failure(gpuisolate, sandbox, tmp_path):
    key, cert = tmp_path / "other.key", tmp_path / "other.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=other-ca", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    config = admin_config(sandbox)
    config["clusters"][0]["cluster"]["certificate-authority-data"] = \
        base64.b64encode(cert.read_bytes()).decode()
    result = gpuisolate("status", "--kubeconfig", write_config(tmp_path, config))
    one_line_error(result, 4, "TLS verification")


def test_unauthorized(gpuisolate, sandbox, tmp_path):
    config = admin_config(sandbox)
    config["users"][0]["user"] = {"token": "not-a-valid-token-e2e"}
    result = gpuisolate("status", "--kubeconfig", write_config(tmp_path, config))
    one_line_error(result, 5, "Unauthorized")
    assert "not-a-valid-token-e2e" not in result.stderr + result.stdout


@pytest.fixture
def limited_user(sandbox):
    """A user with the plugin's ClusterRole minus 'list nodes', reached by impersonation."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": LIMITED_USER},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]},
                  {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": LIMITED_USER},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": LIMITED_USER},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": LIMITED_USER}],
    }
    doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": [role, binding]})
    sandbox.kubectl("apply", "-f", "-", input=doc)
    yield LIMITED_USER
    sandbox.kubectl("delete", "clusterrole,clusterrolebinding", LIMITED_USER, check=False)


def test_rbac_forbidden_names_verb_and_resource(gpuisolate, limited_user):
    result = gpuisolate("status", "--context", "sandbox-admin", "--as", limited_user)
    one_line_error(result, 5, 'cannot list resource "nodes"', limited_user)


def test_operator_context_has_enough_rights(gpuisolate):
    result = gpuisolate("status", "--context", "sandbox-operator")
    assert result.returncode == 0, result.stderr


def test_as_group_needs_as(gpuisolate):
    one_line_error(gpuisolate("status", "--as-group", "system:masters"), 2, "--as-group needs --as")


def test_flags_before_and_after_the_subcommand(gpuisolate, tmp_path):
    before = gpuisolate("--context", "no-such-context", "status")
    after = gpuisolate("status", "--context", "no-such-context")
    assert before.returncode == after.returncode == 3
    assert before.stderr == after.stderr


def test_kubeconfig_env_with_several_files_is_merged(gpuisolate, sandbox, tmp_path):
    """The context lives in the second file; the first only names it as current."""
    config = admin_config(sandbox)
    first = {"apiVersion": "v1", "kind": "Config", "current-context": "merged"}
    second = dict(config, **{"current-context": "", "contexts": [
        {"name": "merged", "context": config["contexts"][0]["context"]}]})
    paths = [write_config(tmp_path, first, "a"), write_config(tmp_path, second, "b")]
    result = gpuisolate("status", env=gpuisolate.env(KUBECONFIG=os.pathsep.join(paths)))
    assert result.returncode == 0, result.stderr
    assert "nkpnai-gpupool-1-z9mz6-pl9k2-4n5fm" in result.stdout
