"""cli.py wiring without a cluster: help, flag placement, one-line errors, exit codes,
and that the fast paths never import ``kubernetes`` or urllib3."""

import contextlib
import os
import subprocess
import sys
import threading

import pytest

from kubectl_gpuisolate import __version__, cli, interrupts
from kubectl_gpuisolate.errors import ConfigError, ConflictError
from kubectl_gpuisolate.exits import EXIT_CONFIG, EXIT_INTERNAL, EXIT_SIGINT, EXIT_USAGE
from kubectl_gpuisolate.flags import ConnectionOptions

from .conftest import REPO


@pytest.fixture(autouse=True)
def no_cluster(tmp_path, monkeypatch):
    """Whatever slips past validation finds no kubeconfig (exit 3), never a server."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("_ARGCOMPLETE", raising=False)


def run_main(argv, capsys):
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- help and version ------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, usage", [
    (["--help"], "usage: kubectl gpuisolate"),
    (["-h"], "usage: kubectl gpuisolate"),
    (["status", "--help"], "usage: kubectl gpuisolate status"),
    (["taint", "--help"], "usage: kubectl gpuisolate taint"),
    (["untaint", "--help"], "usage: kubectl gpuisolate untaint"),
    (["evacuate", "--help"], "usage: kubectl gpuisolate evacuate"),
    (["completion", "--help"], "usage: kubectl gpuisolate completion"),
    (["version", "--help"], "usage: kubectl gpuisolate version"),
], ids=["help", "h", "status", "taint", "untaint", "evacuate", "completion", "version"])
def test_help_exits_zero(argv, usage, capsys):
    code, out, err = run_main(argv, capsys)
    assert code == 0
    assert out.startswith(usage)
    assert err == ""


def test_top_level_help_lists_commands_and_connection_flags(capsys):
    _, out, _ = run_main(["--help"], capsys)
    for word in ("status", "taint", "untaint", "evacuate", "--kubeconfig", "--context",
                 "--request-timeout", "--as-group"):
        assert word in out


@pytest.mark.parametrize("argv", [["--version"], ["version"]], ids=["flag", "command"])
def test_version(argv, capsys):
    code, out, err = run_main(argv, capsys)
    assert code == 0
    assert out == f"kubectl-gpuisolate {__version__}\n"


# -- flag placement --------------------------------------------------------------------------------
PLACEMENT_CASES = [
    (["--context", "x"], "context", "x"),
    (["--kubeconfig", "/k"], "kubeconfig", "/k"),
    (["--cluster", "c"], "cluster", "c"),
    (["--user", "u"], "user", "u"),
    (["-n", "ns"], "namespace", "ns"),
    (["--namespace", "ns"], "namespace", "ns"),
    (["--request-timeout", "10s"], "request_timeout", "10s"),
    (["--as", "jane"], "as_user", "jane"),
    (["--as-group", "g"], "as_groups", ["g"]),
    (["--debug"], "debug", True),
]


@pytest.fixture(scope="module")
def parser():
    return cli.build_parser()


@pytest.mark.parametrize("command", ["status", "taint", "untaint"])
@pytest.mark.parametrize("flag, dest, value", PLACEMENT_CASES,
                         ids=[c[1] + ("-short" if c[0][0] == "-n" else "")
                              for c in PLACEMENT_CASES])
def test_connection_flag_before_and_after_command(parser, command, flag, dest, value):
    before = parser.parse_args(flag + [command])
    after = parser.parse_args([command] + flag)
    assert getattr(before, dest) == value
    assert getattr(after, dest) == value
    assert before.command == after.command == command


def test_connection_flag_absent_is_not_set(parser):
    args = parser.parse_args(["status"])
    for dest in ("context", "kubeconfig", "cluster", "user", "namespace", "request_timeout",
                 "as_user", "as_groups", "debug"):
        assert not hasattr(args, dest)


def test_connection_flag_after_command_wins(parser):
    args = parser.parse_args(["--context", "a", "status", "--context", "b"])
    assert args.context == "b"


def test_connection_flag_before_survives_other_subcommand_flags(parser):
    args = parser.parse_args(["--context", "a", "status", "-o", "json", "n1"])
    assert (args.context, args.output, args.nodes) == ("a", "json", ["n1"])


# -- usage errors: one line, exit 2, before any connection -----------------------------------------
USAGE_CASES = [
    ([], "the following arguments are required: COMMAND"),
    (["bogus"], "invalid choice: 'bogus'"),
    (["--bogus", "status"], "unrecognized arguments: --bogus"),
    (["status", "--bogus"], "unrecognized arguments: --bogus"),
    (["--context"], "expected one argument"),
    (["status", "-o", "xml"], "invalid choice: 'xml'"),
    (["status", "--taint", "nvidia.com/gpu"], "invalid taint 'nvidia.com/gpu': missing effect"),
    (["status", "--taint", "nvidia.com/gpu=true:NoSchedul"], "invalid taint effect 'NoSchedul'"),
    (["status", "--taint", "=true:NoSchedule"], "the key is empty"),
    (["status", "-l", "a in x"], "invalid selector 'a in x'"),
    (["status", "--selector", "a=b=c"], "invalid selector 'a=b=c'"),
    (["status", "n1", "-l", "a=b"], "cannot specify both node names and --selector"),
    (["status", "--as-group", "g"], "--as-group needs --as"),
    (["--as-group", "g", "status"], "--as-group needs --as"),
    (["status", "--request-timeout", "1d"], "invalid --request-timeout '1d'"),
    (["taint", "--taint", "nvidia.com/gpu=true"], "missing effect"),
    (["taint", "--taint", "nvidia.com/gpu=true:NoSchedule-"], "trailing '-'"),
    (["taint", "--dry-run", "maybe"], "invalid choice: 'maybe'"),
    (["taint", "n1", "--selector", "x"], "cannot specify both"),
    (["untaint", "--taint", "nvidia.com/gpu=true"], "without a value"),
    (["untaint", "--taint", "nvidia.com/gpu:Bad"], "invalid taint effect 'Bad'"),
    (["version", "--context", "x"], "unrecognized arguments: --context"),
    (["status", "--insecure-skip-tls-verify=maybe"],
     'invalid argument "maybe" for "--insecure-skip-tls-verify" flag: use true or false'),
    (["--warnings-as-errors=yes", "status"], 'invalid argument "yes" for "--warnings-as-errors" flag'),
]


@pytest.mark.parametrize("argv, fragment", USAGE_CASES,
                         ids=[" ".join(c[0]) or "no-args" for c in USAGE_CASES])
def test_usage_error_is_one_line_exit_2(argv, fragment, capsys):
    code, out, err = run_main(argv, capsys)
    assert code == EXIT_USAGE
    assert out == ""
    assert err.startswith("error: ")
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert fragment in err


@pytest.mark.parametrize("argv", [
    ["--kubeconfig", "/nonexistent", "status"],
    ["status", "--kubeconfig", "/nonexistent"],
    ["taint", "--kubeconfig", "/nonexistent"],
    ["untaint", "--kubeconfig", "/nonexistent", "--dry-run", "client"],
], ids=["before", "status", "taint", "untaint"])
def test_missing_kubeconfig_exit_3(argv, capsys):
    code, out, err = run_main(argv, capsys)
    assert code == EXIT_CONFIG
    assert err == "error: kubeconfig file /nonexistent not found; check --kubeconfig\n"
    assert out == ""


def test_no_kubeconfig_at_all_exit_3(capsys):
    code, _, err = run_main(["status"], capsys)
    assert code == EXIT_CONFIG
    assert err.startswith("error: no kubeconfig found") and err.count("\n") == 1


def test_malformed_kubeconfig_exit_3(tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.write_text("clusters: [\n")
    code, _, err = run_main(["status", "--kubeconfig", str(bad)], capsys)
    assert code == EXIT_CONFIG
    assert err.startswith(f"error: kubeconfig {bad} is not valid YAML at line 2")
    assert err.count("\n") == 1


# -- the command seam: options, then one connection, then run(options, kube, io) -------------------
@pytest.mark.parametrize("argv, pool_size", [
    (["status"], 10), (["taint"], 10), (["untaint"], 10), (["evacuate"], 8 + 4 + 8 + 4),
    (["evacuate", "--max-parallel", "3", "--parallel-nodes", "2"], 3 + 8 + 8 + 4),   # + event writers
], ids=["status", "taint", "untaint", "evacuate", "evacuate-parallel"])
def test_cli_connects_once_with_the_commands_pool_size(monkeypatch, capsys, argv, pool_size):
    calls = []

    def connect(connection, *, pool_size):
        calls.append((connection, pool_size))
        raise ConfigError("not connecting in a unit test")
    monkeypatch.setattr("kubectl_gpuisolate.kube.connect", connect)
    code, out, err = run_main(["--context", "c1"] + argv, capsys)
    assert calls == [(ConnectionOptions(context="c1"), pool_size)]
    assert (code, out, err) == (EXIT_CONFIG, "", "error: not connecting in a unit test\n")


def test_cli_hands_the_command_its_options_the_connection_and_the_streams(monkeypatch, capsys):
    from kubectl_gpuisolate.commands import untaint

    fake, seen = object(), []
    monkeypatch.setattr("kubectl_gpuisolate.kube.connect", lambda connection, *, pool_size: fake)

    def run(options, kube, io):
        seen.append((options, kube))
        io.out.write("to stdout\n")
        io.err.write("to stderr\n")
        return 0
    monkeypatch.setattr(untaint, "run", run)
    assert run_main(["untaint", "n1", "--dry-run", "client"], capsys) == (0, "to stdout\n",
                                                                         "to stderr\n")
    [(options, kube)] = seen
    assert kube is fake
    assert isinstance(options, untaint.UntaintOptions) and options.target.names == ("n1",)


class Warned:
    """A connection that has seen ``count`` distinct server warnings."""

    def __init__(self, count):
        self.count = count

    def warning_count(self):
        return self.count


@pytest.mark.parametrize("flag, count, expected", [
    ([], 2, (0, "")), (["--warnings-as-errors"], 0, (0, "")),
    (["--warnings-as-errors"], 1, (8, "error: 1 warning received\n")),
    (["--warnings-as-errors=true"], 3, (8, "error: 3 warnings received\n")),
    (["--warnings-as-errors=false"], 3, (0, "")),
], ids=["off", "none", "one", "three", "false"])
def test_warnings_as_errors_fails_the_command_after_it_ran(monkeypatch, capsys, flag, count, expected):
    from kubectl_gpuisolate.commands import untaint

    ran = []
    monkeypatch.setattr("kubectl_gpuisolate.kube.connect", lambda connection, *, pool_size: Warned(count))
    monkeypatch.setattr(untaint, "run", lambda options, kube, io: ran.append(1) or 0)
    code, _, err = run_main(["untaint", "n1", *flag], capsys)
    assert (code, err) == expected and ran == [1]


@pytest.mark.parametrize("argv", [["version"], ["completion", "bash"]])
def test_commands_without_a_cluster_never_connect(monkeypatch, capsys, argv):
    def connect(*args, **kwargs):
        raise AssertionError("connected")
    monkeypatch.setattr("kubectl_gpuisolate.kube.connect", connect)
    code, out, err = run_main(argv, capsys)
    assert (code, err) == (0, "") and out


# -- the one exit point ----------------------------------------------------------------------------
def patch_version_run(monkeypatch, exc):
    from kubectl_gpuisolate.commands import version

    def run(options, kube, io):
        raise exc
    monkeypatch.setattr(version, "run", run)


@pytest.mark.parametrize("exc, code, message", [
    (ConflictError("node n1 kept changing"), 7, "error: node n1 kept changing\n"),
    (KeyboardInterrupt(), EXIT_SIGINT, "error: interrupted by SIGINT\n"),
    (interrupts.Terminated(), 143, "error: interrupted by SIGTERM\n"),
    (ValueError("boom"), EXIT_INTERNAL,
     "error: internal error (ValueError: boom); rerun with --debug and report it\n"),
], ids=["gpuisolate-error", "sigint", "sigterm", "bug"])
def test_main_maps_exceptions(monkeypatch, capsys, exc, code, message):
    patch_version_run(monkeypatch, exc)
    assert run_main(["version"], capsys) == (code, "", message)


def test_main_debug_reraises_bugs(monkeypatch):
    patch_version_run(monkeypatch, ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        cli.main(["--debug", "version"])


def test_main_debug_prints_traceback_for_errors(monkeypatch, capsys):
    patch_version_run(monkeypatch, ConflictError("node n1 kept changing"))
    code, out, err = run_main(["--debug", "version"], capsys)
    assert code == 7
    assert err.startswith("Traceback (most recent call last):")
    assert err.endswith("error: node n1 kept changing\n")


# -- import cost: no kubernetes/urllib3 on the fast paths ------------------------------------------
def run_python(args, **kwargs):
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop("_ARGCOMPLETE", None)
    return subprocess.run([sys.executable] + args, cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=60, **kwargs)


def imported_modules(importtime_stderr):
    """Module names from ``-X importtime`` output."""
    names = set()
    for line in importtime_stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def heavy(names):
    return sorted(n for n in names if n.split(".")[0] in ("kubernetes", "urllib3"))


def imported_by(build, *prefixes):
    """The modules under ``prefixes`` that a fresh interpreter has imported after ``build``
    (Python source that builds a parser)."""
    probe = (f"import sys; from kubectl_gpuisolate.cli import build_parser; {build}; "
             f"print(' '.join(m for m in sys.modules if m.startswith({prefixes!r})))")
    proc = run_python(["-c", probe])
    assert proc.returncode == 0, proc.stderr
    return set(proc.stdout.split())


def test_build_parser_imports_neither_kubernetes_nor_urllib3():
    assert imported_by("build_parser()", "kubernetes", "urllib3") == set()


def test_build_parser_imports_no_engine():
    """Every command's parser (help, completion) is built without evacuate's engine and output:
    they wait for its run."""
    assert imported_by("build_parser()", "kubectl_gpuisolate.evacuation",
                       "kubectl_gpuisolate.output.evacuate") == set()


# -- a run builds only its command's parser ----------------------------------------------------
ALONE_CASES = [
    (["status"], "status"),
    (["--context", "a", "status", "-o", "json", "n1"], "status"),
    (["-n", "status", "taint", "n1"], "taint"),                 # a flag's value is not the command
    (["--context=status", "untaint", "n1"], "untaint"),
    (["--cont", "x", "evacuate", "n1"], "evacuate"),            # abbreviated, as argparse reads it
    (["-nfoo", "version"], "version"),
    (["--as", "u", "--as-group", "g", "status", "--all-pods"], "status"),
    (["status", "--help"], "status"),
    (["-h", "status"], None), (["--version"], None), ([], None), (["bogus"], None),
    (["--context"], None), (["--bogus", "status"], None),
]


@pytest.mark.parametrize("argv, command", ALONE_CASES, ids=[" ".join(c[0]) or "none" for c in ALONE_CASES])
def test_named_command_reads_the_line_as_the_full_parser(argv, command):
    shared = cli.Parser(add_help=False)
    cli.add_connection_flags(shared)
    assert cli.named_command(shared, argv) == command


RUNS = [c for c in ALONE_CASES if c[1] and "--help" not in c[0]]


@pytest.mark.parametrize("argv, command", RUNS, ids=[" ".join(c[0]) for c in RUNS])
def test_parser_of_one_command_parses_as_the_full_one(parser, argv, command):
    alone = cli.build_parser(argv)
    assert list(alone.command_line.commands) == [command]
    assert vars(alone.parse_args(argv)) == vars(parser.parse_args(argv))


def test_help_before_the_command_lists_every_command(capsys):
    _, out, _ = run_main(["-h", "status"], capsys)
    assert all(name in out for name in cli.COMMANDS)


def test_a_status_run_imports_no_other_command():
    imported = imported_by("build_parser(['--context', 'x', 'status'])", "kubectl_gpuisolate.commands.")
    assert "kubectl_gpuisolate.commands.status" in imported
    assert not imported & {f"kubectl_gpuisolate.commands.{name}" for name in cli.COMMANDS
                           if name != "status"}, imported


@pytest.mark.parametrize("argv, code", [
    (["--help"], 0),
    (["status", "--taint", "bad"], EXIT_USAGE),
    (["status", "-l", "a in x"], EXIT_USAGE),
    (["version"], 0),
], ids=["help", "bad-taint", "bad-selector", "version"])
def test_module_entry_point_does_not_import_kubernetes(argv, code):
    proc = run_python(["-X", "importtime", "-m", "kubectl_gpuisolate"] + argv)
    assert proc.returncode == code, proc.stderr[-500:]
    names = imported_modules(proc.stderr)
    assert "kubectl_gpuisolate.cli" in names  # the probe does see our imports
    assert heavy(names) == []
    errors = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    assert len(errors) == (1 if code else 0), errors


class _Exits(Exception):
    """How entry_point ended: ('os._exit' or 'sys.exit', code)."""


@pytest.fixture
def exits(monkeypatch):
    def record(how):
        def end(code):
            raise _Exits(how, code)
        return end
    monkeypatch.setattr(cli.os, "_exit", record("os._exit"))
    monkeypatch.setattr(cli.sys, "exit", record("sys.exit"))
    monkeypatch.delitem(cli.sys.modules, "coverage", raising=False)   # a run under pytest-cov
    return lambda: pytest.raises(_Exits)


@contextlib.contextmanager
def thread_running(daemon):
    """A thread that runs for the block (a worker the exit would wait for, unless ``daemon``)."""
    release = threading.Event()
    worker = threading.Thread(target=release.wait, daemon=daemon)
    worker.start()
    try:
        yield
    finally:
        release.set()
        worker.join()


def _broken_pipe(self):
    raise BrokenPipeError(32, "Broken pipe")


UNFLUSHABLE = type("Out", (), {"flush": _broken_pipe})


@pytest.mark.parametrize("code", [0, 1, EXIT_USAGE])
def test_a_finished_run_with_no_worker_left_ends_without_teardown_after_flushing(monkeypatch, exits, code):
    flushed = []
    monkeypatch.setattr(cli, "main", lambda: code)
    monkeypatch.setattr(cli.sys, "stdout", type("Out", (), {"flush": lambda self: flushed.append("out")})())
    with exits() as ended:
        cli.entry_point()
    assert ended.value.args == ("os._exit", code) and flushed == ["out"]


def test_a_run_that_leaves_a_worker_thread_exits_normally_so_it_is_waited_for(monkeypatch, exits):
    monkeypatch.setattr(cli, "main", lambda: 0)
    with thread_running(daemon=False), exits() as ended:
        cli.entry_point()
    assert ended.value.args == ("sys.exit", 0)


def test_a_daemon_thread_does_not_keep_the_normal_exit(monkeypatch, exits):
    monkeypatch.setattr(cli, "main", lambda: 3)
    with thread_running(daemon=True), exits() as ended:
        cli.entry_point()
    assert ended.value.args == ("os._exit", 3)


def test_output_that_cannot_be_flushed_is_left_to_the_normal_exit(monkeypatch, exits):
    monkeypatch.setattr(cli, "main", lambda: 0)
    monkeypatch.setattr(cli.sys, "stdout", UNFLUSHABLE())
    with exits() as ended:
        cli.entry_point()
    assert ended.value.args == ("sys.exit", 0)


@pytest.mark.parametrize("code", [cli.EXIT_SIGINT, cli.EXIT_SIGTERM])
def test_an_interrupted_run_ends_at_once_even_with_workers_left_and_a_broken_pipe(monkeypatch, exits, code):
    monkeypatch.setattr(cli, "main", lambda: code)
    monkeypatch.setattr(cli.sys, "stdout", UNFLUSHABLE())
    with thread_running(daemon=False), exits() as ended:
        cli.entry_point()
    assert ended.value.args == ("os._exit", code)


def test_a_run_under_coverage_exits_normally_so_its_data_is_saved(monkeypatch, exits):
    monkeypatch.setattr(cli, "main", lambda: 0)
    monkeypatch.setitem(cli.sys.modules, "coverage", object())
    with exits() as ended:
        cli.entry_point()
    assert ended.value.args == ("sys.exit", 0)
