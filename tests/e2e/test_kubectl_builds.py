"""Plugin dispatch and completion through every kubectl build on the machine (issue #14): the
builds installed beside kubectl (``kubectl.1.27`` ... ``kubectl.1.33``) each find the plugin on
PATH, run it with their own arguments, and complete through ``kubectl_complete-gpuisolate``."""

import os
import re
import shutil
import subprocess
import sys

import pytest
from plugin import REPO, write_launcher
from sandbox_helpers import GPU_A, GPU_B


def kubectl_builds():
    """{minor version: path} of the kubectl builds beside the kubectl on PATH."""
    kubectl = shutil.which("kubectl")
    assert kubectl, "no kubectl on PATH"
    directory = os.path.dirname(os.path.realpath(kubectl))
    found = {}
    for name in os.listdir(directory):
        match = re.fullmatch(r"kubectl\.1\.(\d+)", name)
        if match:
            found[int(match.group(1))] = os.path.join(directory, name)
    return found


BUILDS = kubectl_builds()


def test_the_machine_has_the_builds_the_tests_promise():
    # Not a silent skip: the parametrized tests below run once per build found here.
    assert set(range(27, 34)) <= set(BUILDS), sorted(BUILDS)


@pytest.fixture(scope="module")
def completing_bin(tmp_path_factory):
    """A directory with the checkout's launcher and a kubectl_complete-gpuisolate beside it."""
    directory = write_launcher(tmp_path_factory.mktemp("completing-bin"))
    helper = os.path.join(directory, "kubectl_complete-gpuisolate")
    with open(helper, "w") as f:
        f.write(f"#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} -m kubectl_gpuisolate "
                "__complete \"$@\"\n")
    os.chmod(helper, 0o755)
    return directory


def run(build, *args, env):
    return subprocess.run([build, *args], capture_output=True, text=True, timeout=180, env=env)


@pytest.mark.parametrize("minor", sorted(BUILDS), ids=lambda m: f"1.{m}")
def test_each_kubectl_build_dispatches_and_completes(minor, completing_bin, gpuisolate, seed):
    build = BUILDS[minor]
    env = gpuisolate.env(PATH=f"{completing_bin}{os.pathsep}{os.environ['PATH']}")
    listed = run(build, "plugin", "list", env=env)
    assert os.path.join(completing_bin, "kubectl-gpuisolate") in listed.stdout, listed.stdout + listed.stderr
    status = run(build, "gpuisolate", "status", "-o", "json", env=env)
    assert status.returncode == 0, status.stderr
    assert GPU_A in status.stdout and GPU_B in status.stdout
    bad = run(build, "gpuisolate", "taint", "a=b:Sometimes", env=env)
    assert bad.returncode == 2 and bad.stderr.startswith("error: "), bad.stderr
    assert "Traceback" not in bad.stderr
    completed = run(build, "__complete", "gpuisolate", "status", "", env=env)
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert sorted(line.split("\t")[0] for line in lines[:-1]) == sorted([GPU_A, GPU_B]), lines
