"""Completion without a cluster: the engine behind kubectl's plugin completion
protocol, the protocol's output, the completers (kubeconfig names, taint
effects, GPU nodes from a fake API server on 127.0.0.1) and the cli dispatch.
The real kubectl and bash are driven in test_shell.py; where each completer is
attached, and node listing through the KubeApi calls, are in test_completers.py."""

import http.server
import io
import json
import os
import subprocess
import sys
import threading

import pytest

from kubectl_gpuisolate import cli
from kubectl_gpuisolate.completion import completers, kubectl_helper
from kubectl_gpuisolate.completion.kubectl_helper import NO_FILE_COMP, NO_SPACE, complete_words, serve_kubectl

from ..conftest import REPO

KUBECONFIG = """\
apiVersion: v1
kind: Config
current-context: prod-gpu
clusters:
- {name: c1, cluster: {server: "SERVER"}}
- {name: c2, cluster: {server: "https://127.0.0.1:1"}}
users:
- {name: admin, user: {token: not-a-secret}}
- {name: viewer, user: {token: not-a-secret}}
contexts:
- {name: prod-gpu, context: {cluster: c1, user: admin}}
- {name: dev, context: {cluster: c2, user: viewer}}
"""


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("_ARGCOMPLETE", raising=False)


@pytest.fixture
def kubeconfig(tmp_path, monkeypatch):
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.replace("SERVER", "https://127.0.0.1:1"))
    monkeypatch.setenv("KUBECONFIG", str(path))
    return path


def words(line):
    """'status --taint x' -> (['status', '--taint'], 'x'); a trailing space completes ''."""
    parts = line.split(" ")
    return parts[:-1], parts[-1]


def run(line):
    found, directive = complete_words(cli.build_parser(), *words(line))
    return found, directive


# -- subcommands and flags -------------------------------------------------------------------------
def test_subcommands_with_descriptions():
    found, directive = run("")
    assert list(found) == list(cli.COMMANDS)
    assert found["status"].startswith("show GPU nodes")
    assert directive == NO_FILE_COMP


def test_subcommand_prefix():
    assert run("st") == ({"status": "show GPU nodes, their taints and misplaced pods"}, NO_FILE_COMP)
    assert list(run("un")[0]) == ["untaint"]


def test_flags_only_once_a_dash_is_typed(monkeypatch):
    monkeypatch.setattr(completers, "list_gpu_nodes", lambda *a, **k: {})
    assert run("status ")[0] == {}
    flags = run("status -")[0]
    assert {"-n", "--namespace", "--context", "--taint", "-o", "--exit-code", "--help"} <= set(flags)
    assert all(f.startswith("-") for f in flags)


def test_double_dash_lists_long_flags_only():
    flags = run("status --")[0]
    assert "--context" in flags and "-n" not in flags
    assert set(run("taint --dr")[0]) == {"--dry-run"}


def test_top_level_flags_before_the_subcommand():
    flags = run("--con")[0]
    assert set(flags) == {"--context"}
    assert set(run("-")[0]) >= {"--version", "--kubeconfig", "-h"}


def test_flags_already_given_are_hidden_but_repeatable_ones_stay():
    flags = run("status --exit-code --as-group g --")[0]
    assert "--exit-code" not in flags
    assert "--as-group" in flags


def test_flag_descriptions_are_single_short_lines():
    for text in run("status -")[0].values():
        assert "\n" not in text and "\t" not in text and len(text) <= 80


# -- option values -----------------------------------------------------------------------------------
@pytest.mark.parametrize("line, expected", [
    ("status -o ", ["wide", "json", "yaml"]),
    ("status --output j", ["json"]),
    ("status --output=y", ["yaml"]),
    ("taint --dry-run=", ["none", "client", "server"]),
    ("untaint --dry-run s", ["server"]),
    ("completion ", ["bash", "zsh"]),
], ids=["short", "long", "attached", "dry-run-attached", "dry-run", "completion"])
def test_choices(line, expected):
    found, directive = run(line)
    assert list(found) == expected
    assert directive == NO_FILE_COMP


def test_taint_default_then_effects():
    assert run("status --taint ")[0] == {"nvidia.com/gpu=true:NoSchedule": "the default"}
    assert run("untaint --taint ")[0] == {"nvidia.com/gpu:NoSchedule": "the default"}
    found, directive = run("taint --taint nvidia.com/gpu=present:")
    assert list(found) == ["nvidia.com/gpu=present:NoSchedule", "nvidia.com/gpu=present:PreferNoSchedule",
                           "nvidia.com/gpu=present:NoExecute"]
    assert directive == NO_FILE_COMP
    assert list(run("status --taint=example.com/accel=yes:No")[0]) == [
        "example.com/accel=yes:NoSchedule", "example.com/accel=yes:NoExecute"]
    assert list(run("untaint --taint nvidia.com/gpu:Pre")[0]) == ["nvidia.com/gpu:PreferNoSchedule"]


def test_taint_key_without_effect_adds_the_colon_and_no_space():
    found, directive = run("taint --taint example.com/accel=yes")
    assert list(found) == ["example.com/accel=yes:"]
    assert directive == NO_FILE_COMP | NO_SPACE


def test_kubeconfig_flag_falls_back_to_file_completion():
    assert run("status --kubeconfig ") == ({}, 0)
    assert run("--kubeconfig=/tm") == ({}, 0)


def test_free_form_values_offer_nothing():
    assert run("status --request-timeout ") == ({}, NO_FILE_COMP)
    assert run("status -l ") == ({}, NO_FILE_COMP)


# -- kubeconfig names ------------------------------------------------------------------------------
def test_contexts_from_kubeconfig(kubeconfig):
    assert list(run("--context ")[0]) == ["dev", "prod-gpu"]
    assert list(run("status --context p")[0]) == ["prod-gpu"]
    assert list(run("status --context=d")[0]) == ["dev"]


def test_contexts_from_the_kubeconfig_flag_already_typed(tmp_path):
    other = tmp_path / "other"
    other.write_text(KUBECONFIG.replace("prod-gpu", "staging-gpu"))
    assert list(run(f"status --kubeconfig {other} --context ")[0]) == ["dev", "staging-gpu"]
    assert list(run(f"--kubeconfig={other} status --context s")[0]) == ["staging-gpu"]


def test_clusters_and_users(kubeconfig):
    assert list(run("status --cluster ")[0]) == ["c1", "c2"]
    assert list(run("status --user v")[0]) == ["viewer"]


def test_no_or_broken_kubeconfig_gives_nothing(tmp_path, monkeypatch):
    assert run("--context ")[0] == {}
    bad = tmp_path / "bad"
    bad.write_text("contexts: [unclosed\n")
    monkeypatch.setenv("KUBECONFIG", str(bad))
    assert run("--context ")[0] == {}
    assert run("--cluster ")[0] == {}


# -- GPU node names ----------------------------------------------------------------------------------
NODES = {"items": [
    {"metadata": {"name": "gpu-b", "labels": {"nvidia.com/gpu.present": "true"}},
     "status": {"capacity": {"nvidia.com/gpu": "8"}},
     "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}},
    {"metadata": {"name": "gpu-a", "labels": {"nvidia.com/gpu.present": "true"}},
     "status": {"capacity": {"nvidia.com/gpu": "2"}}, "spec": {"unschedulable": True}},
    {"metadata": {"name": "cpu-1", "labels": {"nvidia.com/gpu.present": "false"}},
     "status": {"capacity": {"nvidia.com/gpu": "1"}}},   # the GPU Operator's "GPUs gone"
    {"metadata": {"name": "cpu-2"}, "status": {"capacity": {"cpu": "4"}}},
]}


class FakeApi(http.server.BaseHTTPRequestHandler):
    requests = []
    hang = threading.Event()

    def do_GET(self):  # noqa: N802
        FakeApi.requests.append((self.path, self.headers.get("Authorization")))
        if FakeApi.hang.is_set():
            FakeApi.hang.wait(30)  # never answers in time
            return
        body = json.dumps(NODES).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_api(tmp_path, monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeApi)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeApi.requests.clear()
    FakeApi.hang.clear()
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.replace("SERVER", f"http://127.0.0.1:{server.server_port}"))
    monkeypatch.setenv("KUBECONFIG", str(path))
    yield path
    FakeApi.hang.set()
    server.shutdown()
    server.server_close()


def test_gpu_nodes_from_the_api(fake_api):
    found, directive = run("status ")
    assert found == {"gpu-a": "2 GPU, no GPU taint, cordoned", "gpu-b": "8 GPU, GPU taint"}
    assert directive == NO_FILE_COMP
    path, auth = FakeApi.requests[-1]
    assert path == "/api/v1/nodes?limit=500"    # every node; the GPU-node rules pick
    assert auth is None         # as kubectl: a plain-http server is never sent the user's token


def test_gpu_nodes_exclude_those_already_given(fake_api):
    assert list(run("taint gpu-a ")[0]) == ["gpu-b"]
    assert list(run("untaint gpu-")[0]) == ["gpu-a", "gpu-b"]


def test_gpu_nodes_use_the_context_typed(fake_api):
    assert run("status --context dev ")[0] == {}  # dev's server refuses connections
    assert FakeApi.requests == []
    assert list(run("status --context prod-gpu ")[0]) == ["gpu-a", "gpu-b"]


def test_a_server_that_does_not_answer_gives_nothing(fake_api):
    FakeApi.hang.set()
    assert completers.list_gpu_nodes(timeout=0.5) == {}


# -- the protocol ------------------------------------------------------------------------------------
def serve(args):
    out = io.StringIO()
    assert serve_kubectl(cli.build_parser(), args, stdout=out) == 0
    return out.getvalue().splitlines()


def test_protocol_lines_then_directive():
    lines = serve(["st"])
    assert lines == ["status\tshow GPU nodes, their taints and misplaced pods", ":4"]


def test_protocol_without_descriptions():
    assert serve(["__completeNoDesc", "status", "-o", ""]) == ["wide", "json", "yaml", ":4"]
    assert serve(["__complete", "comp"])[-1] == ":4"
    assert serve(["__completeNoDesc", ""])[:-1] == list(cli.COMMANDS)


def test_protocol_no_args_lists_subcommands():
    assert [line.split("\t")[0] for line in serve([])][:-1] == list(cli.COMMANDS)


def test_protocol_error_is_directive_1_and_exit_0(monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("bug")
    monkeypatch.setattr(kubectl_helper, "complete_words", boom)
    assert serve(["status", ""]) == [":1"]


def test_helper_detection():
    assert kubectl_helper.is_kubectl_helper("/x/bin/kubectl_complete-gpuisolate", ["status"])
    assert kubectl_helper.is_kubectl_helper("kubectl-gpuisolate", ["__complete", "st"])
    assert kubectl_helper.is_kubectl_helper("kubectl-gpuisolate", ["__completeNoDesc"])
    assert not kubectl_helper.is_kubectl_helper("/x/bin/kubectl-gpuisolate", ["status"])
    assert not kubectl_helper.is_kubectl_helper("kubectl-gpuisolate", [])


def test_cli_main_dispatches_on_argv0(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["/somewhere/kubectl_complete-gpuisolate", "ver"])
    assert cli.main() == 0
    assert capsys.readouterr().out == "version\tprint the plugin's version\n:4\n"


def test_cli_main_dispatches_on_dunder_complete(capsys):
    assert cli.main(["__complete", "completion", "z"]) == 0
    assert capsys.readouterr().out == "zsh\n:4\n"


# -- direct completion script ------------------------------------------------------------------------
@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_command_prints_argcomplete_script(shell, capsys):
    assert cli.main(["completion", shell]) == 0
    out = capsys.readouterr().out
    assert "_ARGCOMPLETE=1" in out and "kubectl-gpuisolate" in out
    assert ("complete -o nospace" in out) if shell == "bash" else ("compdef" in out)


def test_completion_command_rejects_other_shells(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["completion", "tcsh"])
    assert exc.value.code == 2


# -- fast path: completion imports neither kubernetes nor urllib3 ------------------------------------
def test_completion_imports_no_kubernetes(kubeconfig):
    code = ("import sys, io; sys.argv = ['kubectl_complete-gpuisolate']\n"
            "from kubectl_gpuisolate import cli\n"
            "for args in (['st'], ['status', '-'], ['--context', ''], ['status', '--taint', 'k:']):\n"
            "    cli.main(args)\n"
            "bad = [m for m in ('kubernetes', 'urllib3', 'argcomplete') if m in sys.modules]\n"
            "print('IMPORTED', bad)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                            env=dict(os.environ, PYTHONPATH=REPO))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("IMPORTED []")
