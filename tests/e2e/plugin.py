"""Runs the plugin the way administrators do: ``kubectl gpuisolate ...``,
found by kubectl's plugin discovery on PATH.  (The fixtures built on this are in
conftest.py.)"""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write_launcher(directory):
    """Writes a ``kubectl-gpuisolate`` launcher for this checkout into ``directory``; returns it."""
    launcher = directory / "kubectl-gpuisolate"
    launcher.write_text(f"#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} -m kubectl_gpuisolate \"$@\"\n")
    launcher.chmod(0o755)
    return str(directory)


class Plugin:
    def __init__(self, bin_dir, kubeconfig):
        self.bin_dir, self.kubeconfig = bin_dir, kubeconfig

    def env(self, **extra):
        env = dict(os.environ, PATH=f"{self.bin_dir}{os.pathsep}{os.environ['PATH']}",
                   KUBECONFIG=self.kubeconfig)
        env.update(extra)
        return env

    def __call__(self, *args, timeout=180, env=None):
        """``kubectl gpuisolate ARGS`` -> CompletedProcess (text)."""
        return subprocess.run(["kubectl", "gpuisolate", *args], capture_output=True, text=True,
                              timeout=timeout, env=env or self.env())
