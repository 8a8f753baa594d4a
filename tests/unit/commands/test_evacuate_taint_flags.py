"""evacuate's flags give --taint one meaning, as in status, taint and untaint: the GPU taint.
"Taint first" is --taint-first; the old bare --taint still means it, with kubectl's deprecation
warning (code-review-t3 item 2)."""

import pytest

from kubectl_gpuisolate import cli
from kubectl_gpuisolate.commands.evacuate import EvacuateOptions
from kubectl_gpuisolate.errors import UsageError

DEPRECATED = ("Flag --taint has been deprecated, use --taint-first instead "
              "(--taint now names the GPU taint)")


def parsed(*argv):
    args = cli.build_parser().parse_args(["evacuate", *argv])
    return EvacuateOptions.from_args(args), getattr(args, "deprecations", [])


def test_taint_with_a_value_names_the_gpu_taint_as_in_the_other_commands():
    options, warnings = parsed("--taint", "nvidia.com/gpu=true:NoExecute")
    assert str(options.gpu_taint) == "nvidia.com/gpu=true:NoExecute"
    assert options.taint_first is False and warnings == []
    options, _ = parsed("--taint=example.com/accel=yes:NoSchedule", "gpu-1")
    assert str(options.gpu_taint) == "example.com/accel=yes:NoSchedule"
    assert options.target.names == ("gpu-1",)


def test_taint_first_taints_first_without_a_warning():
    options, warnings = parsed("--taint-first")
    assert options.taint_first is True and warnings == []
    assert str(options.gpu_taint) == "nvidia.com/gpu=true:NoSchedule"


@pytest.mark.parametrize("argv, names", [(["--taint"], ()),
                                         (["--taint", "--delete-emptydir-data"], ()),
                                         (["--taint", "gpu-1"], ("gpu-1",)),
                                         (["gpu-2", "--taint", "node/gpu-1"], ("gpu-2", "gpu-1")),
                                         (["--taint", "--taint"], ())])
def test_the_bare_taint_still_means_taint_first_with_one_warning(argv, names):
    options, warnings = parsed(*argv)
    assert options.taint_first is True
    assert options.target.names == names
    assert warnings == [DEPRECATED]


def test_the_bare_taint_and_a_taint_value_combine():
    options, warnings = parsed("--taint", "--gpu-taint", "example.com/gpu=x:NoExecute")
    assert options.taint_first is True and str(options.gpu_taint) == "example.com/gpu=x:NoExecute"
    assert warnings == [DEPRECATED]


@pytest.mark.parametrize("value", ["nvidia.com/gpu=true", "nvidia.com/gpu=true:Sometimes", "=x:NoSchedule"])
def test_a_malformed_taint_value_is_a_usage_error(value):
    with pytest.raises(UsageError):
        parsed("--taint", value)


def test_cli_prints_the_deprecation_once_on_stderr_before_the_command_runs(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    code = cli.main(["evacuate", "--taint", "--dry-run=client"])
    err = capsys.readouterr().err.splitlines()
    assert err[0] == DEPRECATED and err.count(DEPRECATED) == 1
    assert code == 3 and err[-1].startswith("error: ")     # the missing kubeconfig, after it
