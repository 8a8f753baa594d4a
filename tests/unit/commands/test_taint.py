"""commands/taint.py and commands/untaint.py against a fake cluster: what each write says,
that dry runs write nothing, that a value conflict on any node stops every write, and where
warnings go."""

import pytest

from kubectl_gpuisolate.errors import ApiError, ConflictError, NotFound
from kubectl_gpuisolate.exits import EXIT_CONFLICT, EXIT_OK

from ..evict_fakes import FakeCluster
from ..factories import CONTROL_PLANE_TAINT, GPU_A, GPU_B, GPU_TAINT, GPU_TAINT_PRESENT, gpu_node, node, pod
from .helpers import buffers, run_command

NO_EXECUTE = dict(GPU_TAINT, effect="NoExecute")
TOLERATES_PRESENT = [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present",
                      "effect": "NoSchedule"}]


def cluster(a_taints, b_taints, pods=()):
    return FakeCluster([gpu_node(GPU_A, taints=a_taints), gpu_node(GPU_B, taints=b_taints)],
                       list(pods))


def taints(fake, name):
    return fake.nodes[name]["spec"].get("taints")


# -- taint ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, lines", [
    ([], [f"node/{GPU_A} tainted", f"node/{GPU_B} already tainted"]),
    (["--dry-run=client"], [f"node/{GPU_A} tainted (dry run)", f"node/{GPU_B} already tainted"]),
    (["--dry-run=server"],
     [f"node/{GPU_A} tainted (server dry run)", f"node/{GPU_B} already tainted"]),
], ids=["write", "client-dry-run", "server-dry-run"])
def test_taint_says_what_each_write_did(argv, lines):
    fake = cluster([CONTROL_PLANE_TAINT], [GPU_TAINT])
    code, out, err = run_command(fake, "taint", *argv)
    assert code == EXIT_OK
    assert out.splitlines() == lines
    assert err == ""
    if argv:
        assert fake.log == [] and taints(fake, GPU_A) == [CONTROL_PLANE_TAINT]
    else:
        assert fake.log == [("taint", GPU_A)]
        assert taints(fake, GPU_A) == [CONTROL_PLANE_TAINT, GPU_TAINT]


def test_taint_refuses_a_value_conflict_on_any_node_before_writing_any():
    fake = cluster(None, [GPU_TAINT_PRESENT], [pod("web", node_name=GPU_A)])
    streams = buffers()
    with pytest.raises(ConflictError) as caught:
        run_command(fake, "taint", streams=streams)
    assert caught.value.exit_code == EXIT_CONFLICT
    assert str(caught.value) == (f"node {GPU_B} already has taint nvidia.com/gpu=present:NoSchedule "
                                 "with the same key and effect; use --overwrite to change its value")
    assert fake.log == [] and taints(fake, GPU_A) is None     # the first node was not written
    assert streams.out.getvalue() == "" and streams.err.getvalue() == ""   # nor its pods read


def test_taint_overwrite_modifies_the_value_and_judges_pods_by_the_new_one():
    tolerant_of_present = pod("old-gpu-job", tolerations=TOLERATES_PRESENT, node_name=GPU_B)
    fake = cluster([GPU_TAINT], [GPU_TAINT_PRESENT], [tolerant_of_present])
    code, out, err = run_command(fake, "taint", "--overwrite")
    assert code == EXIT_OK
    assert out.splitlines() == [f"node/{GPU_A} already tainted", f"node/{GPU_B} modified"]
    assert taints(fake, GPU_B) == [GPU_TAINT]
    # It tolerates the value on the node now, not the one that replaces it.
    assert err == (f"node/{GPU_B}: 1 running pod(s) do not tolerate nvidia.com/gpu=true:NoSchedule; "
                   "the taint keeps new ones off, 'kubectl gpuisolate evacuate' moves these\n")


def test_taint_warnings_and_notes_go_to_stderr_and_only_the_writes_to_stdout():
    nodes = [gpu_node(GPU_A), node("cpu-1", capacity={"nvidia.com/gpu": "1"})]
    pods = [pod("web-1", node_name=GPU_A), pod("web-2", node_name=GPU_A),
            pod("gpu-job", requests={"nvidia.com/gpu": "1"}, node_name=GPU_A)]
    code, out, err = run_command(FakeCluster(nodes, pods), "taint", "-l", "nvidia.com/gpu.present=true")
    assert (code, out) == (EXIT_OK, f"node/{GPU_A} tainted\n")
    assert err.splitlines() == [
        "Warning: node(s) with GPU capacity are not selected by nvidia.com/gpu.present=true: cpu-1",
        "Warning: GPU pod default/gpu-job uses nvidia.com/gpu but does not tolerate "
        "nvidia.com/gpu=true:NoSchedule; after a restart it could not be scheduled on this node",
        f"node/{GPU_A}: 2 running pod(s) do not tolerate nvidia.com/gpu=true:NoSchedule; the taint "
        "keeps new ones off, 'kubectl gpuisolate evacuate' moves these",
    ]


def test_a_failed_write_leaves_the_earlier_writes_reported():
    fake = cluster(None, None)
    real = fake.update_node_taints

    def update_node_taints(name, compute, *, dry_run, attempts=8):
        if name == GPU_B:
            raise ApiError("HTTP 500 while patching node", status=500)
        return real(name, compute, dry_run=dry_run, attempts=attempts)
    fake.update_node_taints = update_node_taints
    streams = buffers()
    with pytest.raises(ApiError):
        run_command(fake, "taint", streams=streams)
    assert streams.out.getvalue() == f"node/{GPU_A} tainted\n"


def test_taint_named_nodes_that_do_not_exist():
    with pytest.raises(NotFound) as caught:
        run_command(cluster(None, None), "taint", GPU_A, "gpu-9")
    assert str(caught.value).startswith("node(s) not found: gpu-9")


# -- untaint --------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, lines", [
    ([], [f"node/{GPU_A} untainted", f"node/{GPU_B} not tainted"]),
    (["--dry-run=client"], [f"node/{GPU_A} untainted (dry run)", f"node/{GPU_B} not tainted"]),
    (["--dry-run=server"],
     [f"node/{GPU_A} untainted (server dry run)", f"node/{GPU_B} not tainted"]),
], ids=["write", "client-dry-run", "server-dry-run"])
def test_untaint_says_what_each_write_did_and_a_dry_run_writes_nothing(argv, lines):
    fake = cluster([CONTROL_PLANE_TAINT, GPU_TAINT, NO_EXECUTE], [CONTROL_PLANE_TAINT])
    code, out, err = run_command(fake, "untaint", *argv)
    assert (code, err) == (EXIT_OK, "")
    assert out.splitlines() == lines
    if argv:
        assert fake.log == []
        assert taints(fake, GPU_A) == [CONTROL_PLANE_TAINT, GPU_TAINT, NO_EXECUTE]
    else:
        assert fake.log == [("taint", GPU_A)]
        assert taints(fake, GPU_A) == [CONTROL_PLANE_TAINT, NO_EXECUTE]   # only NoSchedule
    assert taints(fake, GPU_B) == [CONTROL_PLANE_TAINT]


def test_untaint_a_key_removes_every_effect_and_nothing_else():
    fake = cluster([CONTROL_PLANE_TAINT, GPU_TAINT, NO_EXECUTE], None)
    code, out, _ = run_command(fake, "untaint", "--taint", "nvidia.com/gpu")
    assert code == EXIT_OK and out.splitlines()[0] == f"node/{GPU_A} untainted"
    assert taints(fake, GPU_A) == [CONTROL_PLANE_TAINT]


# -- a taint something takes off again ------------------------------------------------------------
def remove_gpu_taint(fake):
    node = fake.nodes[GPU_A]
    node["spec"]["taints"] = [t for t in node["spec"].get("taints") or () if t["key"] != "nvidia.com/gpu"]
    node["metadata"]["managedFields"] = [{"manager": "taint-sync", "operation": "Update",
                                          "time": "2026-12-01T10:00:00Z",
                                          "fieldsV1": {"f:spec": {"f:taints": {}}}}]


def test_a_taint_removed_after_every_write_stops_after_three_writes_naming_the_remover():
    fake = cluster(None, [GPU_TAINT])
    fake.on_pause = remove_gpu_taint
    streams = buffers()
    with pytest.raises(ConflictError) as caught:
        run_command(fake, "taint", streams=streams)
    assert caught.value.exit_code == EXIT_CONFLICT
    assert str(caught.value).startswith(
        f"node {GPU_A}: nvidia.com/gpu=true:NoSchedule was removed again after each of 3 writes: "
        "field manager 'taint-sync' (the node's managedFields) removes it")
    assert fake.log == [("taint", GPU_A)] * 3 and fake.pauses == [1.0] * 3
    assert streams.out.getvalue().splitlines() == [f"node/{GPU_A} tainted", f"node/{GPU_B} already tainted"]
    assert [line.split(": ", 2)[-1] for line in streams.err.getvalue().splitlines()] == [
        f"nvidia.com/gpu=true:NoSchedule was removed after it was written; writing it again "
        f"(write {n} of at most 3)" for n in (2, 3)]


def test_a_taint_removed_once_is_written_again_and_then_kept():
    fake = cluster(None, None)
    removals = []

    def remove_once(fake):
        if not removals:
            removals.append(1)
            remove_gpu_taint(fake)
    fake.on_pause = remove_once
    code, out, err = run_command(fake, "taint", "--verify-after", "250ms")
    assert code == EXIT_OK
    assert fake.log == [("taint", GPU_A), ("taint", GPU_B), ("taint", GPU_A)]
    assert fake.pauses == [0.25, 0.25] and taints(fake, GPU_A) == [GPU_TAINT]
    assert "writing it again (write 2 of at most 3)" in err


@pytest.mark.parametrize("argv", [["--verify-after", "0"], ["--dry-run=server"]])
def test_no_second_read_without_a_verify_window_or_a_real_write(argv):
    fake = cluster(None, None)
    fake.on_pause = remove_gpu_taint
    code, _, _ = run_command(fake, "taint", *argv)
    assert code == EXIT_OK and fake.pauses == []


def test_nodes_already_tainted_are_not_read_again():
    fake = cluster([GPU_TAINT], [GPU_TAINT])
    code, _, _ = run_command(fake, "taint")
    assert code == EXIT_OK and fake.pauses == [] and fake.log == []
