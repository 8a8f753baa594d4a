"""The engine's settings are one frozen value built from evacuate's flags, and Evacuation is
whole once constructed (code-review-t3 item 3)."""

import dataclasses
import io

import pytest

from kubectl_gpuisolate import cli
from kubectl_gpuisolate.commands.evacuate import EvacuateOptions
from kubectl_gpuisolate.core.dryrun import DryRun
from kubectl_gpuisolate.evacuation.run import Evacuation
from kubectl_gpuisolate.evacuation.settings import Settings

from ..evict_fakes import FakeClock, FakeCluster


def settings(*argv):
    return EvacuateOptions.from_args(cli.build_parser().parse_args(["evacuate", *argv])).settings()


def test_the_flags_become_the_engines_settings():
    got = settings("gpu-1", "gpu-2", "--taint-first", "--gpu-taint", "example.com/gpu=x:NoExecute",
                   "--force", "--delete-emptydir-data", "--grace-period", "5", "--timeout", "2m",
                   "--max-parallel", "3", "--parallel-nodes", "2", "--dry-run=server", "-o", "json")
    assert isinstance(got, Settings)
    assert got.names == ("gpu-1", "gpu-2") and got.requirements is None
    assert str(got.gpu_taint) == "example.com/gpu=x:NoExecute"
    assert (got.taint_first, got.force, got.delete_emptydir_data) == (True, True, True)
    assert (got.grace_period, got.timeout, got.max_parallel, got.parallel_nodes) == (5, 120, 3, 2)
    assert got.dry_run is DryRun.SERVER and got.taint_lines_to_err is True
    assert got.plan_options.force and got.plan_options.delete_emptydir_data
    assert settings().taint_lines_to_err is False and settings().timeout == 600
    assert settings("--timeout", "0").timeout is None


def test_the_settings_cannot_be_changed():
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings().force = True


def test_an_evacuation_is_set_up_by_its_constructor_alone():
    run = Evacuation(FakeCluster([], []), settings(), out=io.StringIO(), err=io.StringIO(),
                     clock=FakeClock())
    assert run.cluster_nodes is None and run.fenced == set() and run.run_names == frozenset()
