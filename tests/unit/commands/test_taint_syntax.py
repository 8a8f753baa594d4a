"""kubectl taint's syntax beside --gpu-taint: `taint [NODE...] KEY[=VALUE]:EFFECT`, `untaint [NODE...]
KEY[:EFFECT]-`, and node/NAME or nodes/NAME as names; a taint-shaped argument is never a node."""

import pytest

from kubectl_gpuisolate.errors import UsageError
from kubectl_gpuisolate.exits import EXIT_OK

from ..evict_fakes import FakeCluster
from ..factories import GPU_A, GPU_B, GPU_TAINT, gpu_node
from .helpers import run_command

PRESENT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def cluster(a=None, b=None):
    return FakeCluster([gpu_node(GPU_A, taints=a), gpu_node(GPU_B, taints=b)], [])


def taints(fake, name):
    return fake.nodes[name]["spec"].get("taints") or []


@pytest.mark.parametrize("argv, written", [
    (["nvidia.com/gpu=present:NoSchedule"], {GPU_A: [PRESENT], GPU_B: [PRESENT]}),
    ([GPU_A, "nvidia.com/gpu=present:NoSchedule"], {GPU_A: [PRESENT], GPU_B: []}),
    (["nvidia.com/gpu=present:NoSchedule", f"node/{GPU_B}"], {GPU_A: [], GPU_B: [PRESENT]}),
    ([f"nodes/{GPU_A}"], {GPU_A: [GPU_TAINT], GPU_B: []}),
    ([GPU_A, "nvidia.com/gpu=true:NoSchedule", "--gpu-taint", "nvidia.com/gpu=true:NoSchedule"],
     {GPU_A: [GPU_TAINT], GPU_B: []}),
], ids=["taint-only", "name-then-taint", "taint-then-node-slash", "nodes-slash", "same-twice"])
def test_taint_takes_the_taint_and_names_positionally(argv, written):
    fake = cluster()
    code, out, _ = run_command(fake, "taint", *argv)
    assert code == EXIT_OK
    assert {name: taints(fake, name) for name in (GPU_A, GPU_B)} == written
    assert out.count("tainted") == sum(1 for t in written.values() if t)


@pytest.mark.parametrize("argv, message", [
    (["a=b:NoSchedule", "c=d:NoSchedule"], "one taint at a time: got a=b:NoSchedule, c=d:NoSchedule"),
    (["nvidia.com/gpu=present:NoSchedule", "--gpu-taint", "x=y:NoSchedule"],
     "give the taint once: 'nvidia.com/gpu=present:NoSchedule' or --gpu-taint 'x=y:NoSchedule' "
     "(KEY[=VALUE]:EFFECT)"),
    (["nvidia.com/gpu=true"], "invalid taint 'nvidia.com/gpu=true'"),
])
def test_taint_refuses_ambiguous_or_malformed_positional_taints(argv, message):
    fake = cluster()
    with pytest.raises(UsageError) as caught:
        run_command(fake, "taint", *argv)
    assert str(caught.value).startswith(message)
    assert fake.log == []


@pytest.mark.parametrize("argv, left", [
    (["nvidia.com/gpu:NoSchedule-"], {GPU_A: [], GPU_B: []}),
    (["nvidia.com/gpu-"], {GPU_A: [], GPU_B: []}),
    ([f"node/{GPU_A}", "nvidia.com/gpu:NoSchedule-"], {GPU_A: [], GPU_B: [GPU_TAINT]}),
    (["other:NoSchedule-"], {GPU_A: [GPU_TAINT], GPU_B: [GPU_TAINT]}),
], ids=["key-effect", "key", "node-slash", "another-key"])
def test_untaint_takes_kubectls_trailing_dash(argv, left):
    fake = cluster([GPU_TAINT], [GPU_TAINT])
    code, _, _ = run_command(fake, "untaint", *argv)
    assert code == EXIT_OK
    assert {name: taints(fake, name) for name in (GPU_A, GPU_B)} == left


def test_untaint_says_a_taint_to_remove_ends_with_a_dash():
    fake = cluster([GPU_TAINT], [GPU_TAINT])
    with pytest.raises(UsageError) as caught:
        run_command(fake, "untaint", "nvidia.com/gpu:NoSchedule")
    assert str(caught.value) == ("'nvidia.com/gpu:NoSchedule': to remove a taint, end it with '-' "
                                 "(KEY[:EFFECT]-), as in kubectl taint")
    assert fake.log == []


@pytest.mark.parametrize("command", ["status", "evacuate"])
def test_other_commands_say_a_taint_shaped_argument_is_no_node(command):
    with pytest.raises(UsageError) as caught:
        run_command(cluster(), command, "nvidia.com/gpu=true:NoSchedule")
    assert str(caught.value) == ("'nvidia.com/gpu=true:NoSchedule' is not a node name (it looks like "
                                 "a taint; this command takes the taint with --gpu-taint)")


def test_status_reads_node_slash_names():
    code, out, _ = run_command(cluster(), "status", f"node/{GPU_B}")
    assert code == EXIT_OK
    assert f"node/{GPU_B}:" in out and f"node/{GPU_A}:" not in out
