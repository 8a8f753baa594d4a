"""taint with a NoExecute or PreferNoSchedule GPU taint: NoExecute lists the pods it would
delete on every node and refuses (exit 9, nothing written) unless --allow-pod-deletion;
PreferNoSchedule is written with a warning."""

import pytest

from kubectl_gpuisolate.errors import GpuIsolateError, UsageError
from kubectl_gpuisolate.exits import EXIT_OK, EXIT_PREFLIGHT, EXIT_USAGE

from ..evict_fakes import FakeCluster
from ..factories import GPU_A, GPU_B, GPU_TAINT, INFERENCE_TOLERATIONS, gpu_node, owner, pdb, pod
from .helpers import buffers, run_command

NOEXEC_SPEC = "nvidia.com/gpu=true:NoExecute"
NO_EXECUTE = dict(GPU_TAINT, effect="NoExecute")
TOL_NOEXEC = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}


def seedish():
    """Node A: a tolerating pod only.  Node B: the seed's victims of issue #12."""
    pods = [pod("ok", node_name=GPU_A, tolerations=[TOL_NOEXEC]),
            pod("nai-db-0", "nai", labels={"app": "db"}, owner_ref=owner("StatefulSet", "nai-db"),
                node_name=GPU_B),
            pod("llama", "infer", requests={"nvidia.com/gpu": "1"},
                tolerations=INFERENCE_TOLERATIONS, node_name=GPU_B),
            pod("dp", "gpu-operator", owner_ref=owner("DaemonSet", "nvidia-device-plugin"),
                node_name=GPU_B, tolerations=[dict(TOL_NOEXEC, tolerationSeconds=30)])]
    return FakeCluster([gpu_node(GPU_A), gpu_node(GPU_B)], pods,
                       [pdb("nai-db", "nai", selector={"matchLabels": {"app": "db"}}, allowed=0)])


def test_noexecute_lists_what_it_would_delete_and_writes_nothing():
    fake = seedish()
    streams = buffers()
    with pytest.raises(GpuIsolateError) as caught:
        run_command(fake, "taint", "--gpu-taint", NOEXEC_SPEC, streams=streams)
    assert caught.value.exit_code == EXIT_PREFLIGHT
    assert str(caught.value) == (
        f"{NOEXEC_SPEC} would delete 3 pod(s) on 1 node(s), listed above, bypassing every "
        "PodDisruptionBudget; nothing was written: move them first with 'kubectl gpuisolate "
        "evacuate --taint-first', or pass --allow-pod-deletion")
    assert fake.log == []
    assert streams.out.getvalue() == ""
    assert streams.err.getvalue().splitlines() == [
        f"node/{GPU_B}: {NOEXEC_SPEC} would delete 3 pod(s) (the taint-eviction controller "
        "deletes them, bypassing the Eviction API and every PodDisruptionBudget):",
        f"  nai/nai-db-0 (PDB-guarded (nai-db)): deleted at once; it does not tolerate {NOEXEC_SPEC}",
        f"  infer/llama (GPU consumer): deleted at once; it does not tolerate {NOEXEC_SPEC}",
        "  gpu-operator/dp (DaemonSet pod (the DaemonSet recreates it and it is deleted again)): "
        f"deleted after 30s (its tolerationSeconds); its toleration of {NOEXEC_SPEC} has "
        "tolerationSeconds"]


def test_noexecute_checks_every_node_before_the_first_write():
    # The victims are on the second node: the first, clean one must not be written either.
    fake = seedish()
    with pytest.raises(GpuIsolateError):
        run_command(fake, "taint", "--gpu-taint", NOEXEC_SPEC)
    assert fake.nodes[GPU_A]["spec"].get("taints") is None


def test_allow_pod_deletion_writes_and_still_lists_the_pods():
    fake = seedish()
    code, out, err = run_command(fake, "taint", "--gpu-taint", NOEXEC_SPEC, "--allow-pod-deletion")
    assert code == EXIT_OK
    assert out.splitlines() == [f"node/{GPU_A} tainted", f"node/{GPU_B} tainted"]
    assert err.splitlines()[0].startswith(f"node/{GPU_B}: {NOEXEC_SPEC} will delete 3 pod(s)")
    assert fake.log == [("taint", GPU_A), ("taint", GPU_B)]
    assert fake.nodes[GPU_B]["spec"]["taints"] == [NO_EXECUTE]


def test_noexecute_without_victims_is_written_silently():
    fake = FakeCluster([gpu_node(GPU_A)], [pod("ok", tolerations=[TOL_NOEXEC])])
    code, out, err = run_command(fake, "taint", "--gpu-taint", NOEXEC_SPEC)
    assert (code, out, err) == (EXIT_OK, f"node/{GPU_A} tainted\n", "")


def test_noexecute_already_on_the_node_is_not_a_new_deletion():
    fake = FakeCluster([gpu_node(GPU_A, taints=[NO_EXECUTE])],
                       [pod("lingers", tolerations=[dict(TOL_NOEXEC, tolerationSeconds=600)])])
    code, out, err = run_command(fake, "taint", "--gpu-taint", NOEXEC_SPEC)
    assert (code, out, err) == (EXIT_OK, f"node/{GPU_A} already tainted\n", "")


def test_a_noschedule_gpu_taint_does_not_count_as_the_noexecute_one():
    fake = FakeCluster([gpu_node(GPU_A, taints=[GPU_TAINT])],
                       [pod("llama", requests={"nvidia.com/gpu": "1"},
                            tolerations=INFERENCE_TOLERATIONS)])
    with pytest.raises(GpuIsolateError) as caught:
        run_command(fake, "taint", "--gpu-taint", NOEXEC_SPEC)
    assert caught.value.exit_code == EXIT_PREFLIGHT and fake.log == []


def test_prefer_no_schedule_is_written_with_a_one_line_warning():
    fake = FakeCluster([gpu_node(GPU_A)], [])
    code, out, err = run_command(fake, "taint", "--gpu-taint", "nvidia.com/gpu=true:PreferNoSchedule")
    assert code == EXIT_OK and out == f"node/{GPU_A} tainted\n"
    assert err == ("Warning: nvidia.com/gpu=true:PreferNoSchedule is only a preference: the "
                   "scheduler may still place pods that do not tolerate it on these nodes; use "
                   "NoSchedule to keep them off\n")


def test_an_unknown_effect_is_a_usage_error():
    fake = FakeCluster([gpu_node(GPU_A)], [])
    with pytest.raises(UsageError) as caught:
        run_command(fake, "taint", "--gpu-taint", "nvidia.com/gpu=true:NoExecut")
    assert caught.value.exit_code == EXIT_USAGE
    assert str(caught.value) == ("invalid taint effect 'NoExecut' in 'nvidia.com/gpu=true:NoExecut': "
                                 "use one of NoSchedule, PreferNoSchedule, NoExecute")
    assert fake.log == []
