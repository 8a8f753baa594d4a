"""evacuate with the landing check: a pod whose replacement could land nowhere is never evicted,
is named in the report with the fix, and does not fail the run by itself."""

import json

from ..evict_fakes import FakeCluster
from ..factories import GPU_A, GPU_TAINT, gpu_node, pod
from .test_evacuate import execute

HOST = "kubernetes.io/hostname"


def cluster():
    return FakeCluster([gpu_node(GPU_A, taints=[GPU_TAINT])],
                       [pod("web", "apps"), pod("pinned", "rook", node_selector={HOST: GPU_A})])


def test_a_pinned_pod_is_left_in_place_and_named_with_the_fix():
    fake = cluster()
    code, out, err = execute(fake, GPU_A)
    assert code == 0
    assert fake.evicted() == ["apps/web"]
    assert "Left in place, nowhere to land (to move it, relax that constraint" in out
    assert f"rook/pinned  nowhere to land: nodeSelector {HOST}={GPU_A}" in out


def test_the_document_lists_it_and_a_dry_run_plans_it_as_staying():
    code, out, _ = execute(cluster(), GPU_A, "-o", "json")
    [node_doc] = json.loads(out)["nodes"]
    assert node_doc["moved"] == ["apps/web"]
    assert node_doc["stayed"] == {"nowhere-to-land": ["rook/pinned"]}
    assert [p["pod"] for p in node_doc["nowhereToLand"]] == ["rook/pinned"]
    fake = cluster()
    _, out, _ = execute(fake, GPU_A, "--dry-run=client")
    assert "would evict 1 pod(s), 1 stay" in out
    assert fake.evicted() == []
