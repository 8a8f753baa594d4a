"""Completion through the real programs, without a cluster: kubectl's plugin
completion (``kubectl __complete gpuisolate ...`` runs our
``kubectl_complete-gpuisolate`` link) and bash with the script that
``kubectl gpuisolate completion bash`` prints.  The same checks against the
built zipapp, with node names from the sandbox, are in tests/e2e/test_dist.py."""

import os
import shutil
import subprocess
import sys

import pytest

from ..conftest import REPO

KUBECTL = os.environ.get("SANDBOX_KUBECTL", "/usr/bin/kubectl")
KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- {name: c1, cluster: {server: "https://127.0.0.1:1"}}
users:
- {name: u1, user: {token: not-a-secret}}
contexts:
- {name: prod-gpu, context: {cluster: c1, user: u1}}
- {name: dev, context: {cluster: c1, user: u1}}
"""


def require(program):
    path = program if os.path.isabs(program) else shutil.which(program)
    if not path or not os.access(path, os.X_OK):
        pytest.fail(f"{program} is needed for this test and was not found; install it "
                    "(kubectl >= 1.26, bash)")
    return path


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory):
    """kubectl-gpuisolate for this checkout, plus the kubectl_complete-gpuisolate link."""
    directory = tmp_path_factory.mktemp("complete-bin")
    launcher = directory / "kubectl-gpuisolate"
    launcher.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {REPO!r})\n"
                        "from kubectl_gpuisolate.cli import entry_point\nentry_point()\n")
    launcher.chmod(0o755)
    (directory / "kubectl_complete-gpuisolate").symlink_to("kubectl-gpuisolate")
    return directory


@pytest.fixture
def env(bin_dir, tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    return dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                KUBECONFIG=str(kubeconfig), HOME=str(tmp_path))


def kubectl_complete(env, *args):
    """``kubectl __complete gpuisolate ARGS`` -> (candidate lines, directive line)."""
    result = subprocess.run([require(KUBECTL), "__complete", "gpuisolate", *args], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    return lines[:-1], lines[-1]


def test_kubectl_calls_the_helper_for_subcommands(env):
    lines, directive = kubectl_complete(env, "")
    assert [line.split("\t")[0] for line in lines] == [
        "status", "taint", "untaint", "evacuate", "guard", "completion", "version"]
    assert directive == ":4"
    assert kubectl_complete(env, "unt") == (["untaint\tremove the GPU taint from the GPU nodes"], ":4")


def test_kubectl_flags_after_a_dash(env):
    lines, directive = kubectl_complete(env, "status", "--ex")
    assert lines == ["--exit-code\texit 1 when pods are misplaced or GPU nodes are untainted"]
    assert directive == ":4"


def test_kubectl_contexts_and_bare_values_for_flag_equals(env):
    assert kubectl_complete(env, "status", "--context", "") == (["dev", "prod-gpu"], ":4")
    assert kubectl_complete(env, "status", "--context=p") == (["prod-gpu"], ":4")


def test_kubectl_taint_effects(env):
    lines, directive = kubectl_complete(env, "taint", "--taint", "nvidia.com/gpu=true:N")
    assert [line.split("\t")[0] for line in lines] == ["nvidia.com/gpu=true:NoSchedule",
                                                       "nvidia.com/gpu=true:NoExecute"]
    assert directive == ":4"


def test_kubectl_no_nodes_without_a_cluster(env):
    # The kubeconfig's server refuses connections: no candidates, no file names.
    assert kubectl_complete(env, "status", "") == ([], ":4")


def test_kubectl_without_the_helper_falls_back_to_files(env, tmp_path):
    """The reason for the link: without it kubectl offers file names (directive 0)."""
    alone = tmp_path / "alone"
    alone.mkdir()
    os.symlink(os.path.join(env["PATH"].split(os.pathsep)[0], "kubectl-gpuisolate"),
               alone / "kubectl-gpuisolate")
    lines, directive = kubectl_complete(dict(env, PATH=f"{alone}{os.pathsep}/usr/bin:/bin"), "st")
    assert directive == ":0"


BASH_DRIVER = r"""
source <(kubectl-gpuisolate completion bash)
fn=$(complete -p kubectl-gpuisolate | sed -E 's/.* -F ([^ ]+) .*/\1/')
try() {
  COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}; COMP_TYPE=9
  read -ra COMP_WORDS <<< "$COMP_LINE"
  [[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=("")
  COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
  COMPREPLY=()
  "$fn" kubectl-gpuisolate "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
  printf '%s|' "${COMPREPLY[@]}"; echo
}
try "kubectl-gpuisolate st"
try "kubectl-gpuisolate "
try "kubectl-gpuisolate status --exit"
try "kubectl-gpuisolate status --context "
try "kubectl-gpuisolate taint --taint nvidia.com/gpu=true:No"
try "kubectl-gpuisolate completion "
"""


def test_bash_with_the_printed_script(env):
    result = subprocess.run([require("bash"), "-c", BASH_DRIVER], env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "status |",
        "status|taint|untaint|evacuate|guard|completion|version|",
        "--exit-code |",
        "dev|prod-gpu|",
        "NoSchedule|NoExecute|",  # bash breaks words at ':' (COMP_WORDBREAKS)
        "bash|zsh|",
    ]
