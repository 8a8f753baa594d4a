"""The sandbox's reset (tests/sandbox/sandboxctl/load.py) decides from two snapshots what to
rebuild: only the workloads and PDBs a test changed, or everything when anything else changed."""

import os
import sys

from .conftest import REPO

sys.path.insert(0, os.path.join(str(REPO), "tests", "sandbox"))
from sandboxctl.load import changed_workloads  # noqa: E402

NS = "nai-system"
BASE = [
    ["deployments", NS, "nai-ui", "uid-d", 1],
    ["pods", NS, "nai-ui-7c9-abcde", "uid-p", "gpu-b", "Running", False, "nai-ui"],
    ["poddisruptionbudgets", NS, "nai-db", "uid-b", 1],
    ["daemonsets", "kube-system", "cilium", "uid-ds", 1],
    ["pods", "kube-system", "cilium-x1", "uid-c", "gpu-b", "Running", False, "cilium"],
    ["persistentvolumes", "", "local-pv-rook-osd-set1-9xdn9", "uid-pv", "Bound"],
]


def changed(*edits, drop=()):
    current = [row for row in BASE if row[2] not in drop] + [list(e) for e in edits]
    return changed_workloads(BASE, current)


def test_nothing_changed_is_nothing_to_rebuild():
    assert changed_workloads(BASE, [list(r) for r in BASE]) == (set(), set())


def test_a_moved_pod_rebuilds_its_workload_only():
    moved = ["pods", NS, "nai-ui-7c9-fghij", "uid-q", "cpu-1", "Running", False, "nai-ui"]
    assert changed(moved, drop=("nai-ui-7c9-abcde",)) == ({(NS, "nai-ui")}, set())


def test_a_scaled_workload_and_a_deleted_pdb_are_rebuilt():
    scaled = ["deployments", NS, "nai-ui", "uid-d", 2]
    assert changed(scaled, drop=("nai-ui", "nai-db")) == ({(NS, "nai-ui")}, {(NS, "nai-db")})


def test_anything_else_means_a_whole_rebuild():
    ds_pod = ["pods", "kube-system", "cilium-x2", "uid-c2", "gpu-b", "Running", False, "cilium"]
    stray = ["pods", NS, "debug", "uid-s", "gpu-b", "Running", False, None]
    volume = ["persistentvolumes", "", "local-pv-rook-osd-set1-9xdn9", "uid-pv2", "Bound"]
    unknown = ["deployments", NS, "not-in-the-seed", "uid-n", 1]
    assert changed(ds_pod, drop=("cilium-x1",)) is None
    assert changed(stray) is None
    assert changed(volume, drop=("local-pv-rook-osd-set1-9xdn9",)) is None
    assert changed(unknown) is None


def test_a_claim_being_deleted_means_a_whole_rebuild():
    """A claim a test deleted stays Bound while a pod uses it: its row says it is terminating."""
    base = BASE + [["persistentvolumeclaims", "kommander", "osd", "uid-c", "Bound", False]]
    deleting = BASE + [["persistentvolumeclaims", "kommander", "osd", "uid-c", "Bound", True]]
    assert changed_workloads(base, deleting) is None
