"""output/taint.py: one line per node; the dry-run suffix only where the write would change it."""

import pytest

from kubectl_gpuisolate.core import taints
from kubectl_gpuisolate.core.dryrun import DryRun
from kubectl_gpuisolate.output.taint import TaintChange, render_change


@pytest.mark.parametrize("verb, dry_run, line", [
    (taints.TAINTED, DryRun.NONE, "node/n1 tainted\n"),
    (taints.TAINTED, DryRun.CLIENT, "node/n1 tainted (dry run)\n"),
    (taints.MODIFIED, DryRun.SERVER, "node/n1 modified (server dry run)\n"),
    (taints.UNTAINTED, DryRun.CLIENT, "node/n1 untainted (dry run)\n"),
    (taints.ALREADY_TAINTED, DryRun.CLIENT, "node/n1 already tainted\n"),
    (taints.NOT_TAINTED, DryRun.SERVER, "node/n1 not tainted\n"),
])
def test_render_change(verb, dry_run, line):
    assert render_change(TaintChange("n1", verb, dry_run)) == line
