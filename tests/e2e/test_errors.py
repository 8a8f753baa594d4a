"""Every failure is one line on stderr that says what to fix, with the
documented exit code, no traceback, and no change to the cluster.  The table of
bad inputs (flags, taints, selectors, kubeconfig and server problems) is in
test_bad_input.py; these are the cases that need more than one command."""

import json
import os

import pytest

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


@pytest.mark.window
def test_rbac_forbidden_names_verb_and_resource(gpuisolate, limited_user):
    result = gpuisolate("status", "--context", "sandbox-admin", "--as", limited_user)
    one_line_error(result, 5, 'cannot list resource "nodes"', limited_user)


def test_operator_context_has_enough_rights(gpuisolate):
    result = gpuisolate("status", "--context", "sandbox-operator")
    assert result.returncode == 0, result.stderr


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
