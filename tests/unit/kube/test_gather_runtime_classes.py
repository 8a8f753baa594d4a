"""kube/gather.py reads the RuntimeClasses for core/hidden_gpu.py: one list, only when a pod names
a runtime class; when it cannot, one warning, and the planner judges a class by its name."""

import copy

from kubectl_gpuisolate.core.planner import MOVE, STAY, PlanOptions
from kubectl_gpuisolate.core.taints import Taint
from kubectl_gpuisolate.errors import api_error
from kubectl_gpuisolate.kube import gather

from ..evict_fakes import FakeCluster
from ..factories import GPU_A, GPU_TAINT, gpu_node, owner, pod

OPTIONS = PlanOptions(Taint("nvidia.com/gpu", "true", "NoSchedule"))


def with_runtime(name, runtime):
    the_pod = copy.deepcopy(pod(name))
    the_pod["spec"]["runtimeClassName"] = runtime
    return the_pod


def plan(cluster):
    warnings = []
    plans = gather.build_plans(cluster, [cluster.nodes[GPU_A]], OPTIONS, warn=warnings.append)
    return {d.name: (d.action, d.reason) for d in plans[0].decisions}, warnings


def test_no_pod_names_a_runtime_class_and_none_is_read():
    operator_pod = with_runtime("nvidia-device-plugin-x", "nvidia")
    operator_pod["metadata"]["ownerReferences"] = [owner("DaemonSet", "nvidia-device-plugin")]
    cluster = FakeCluster([gpu_node(GPU_A, taints=[GPU_TAINT])], [pod("web-1"), operator_pod],
                          runtime_classes={"nvidia": "nvidia"})
    decisions, warnings = plan(cluster)
    assert decisions == {"web-1": (MOVE, "not-tolerated"), "nvidia-device-plugin-x": (STAY, "daemonset")}
    assert "runtime classes" not in cluster.reads and warnings == []


def test_the_handler_decides_in_one_list():
    pods = [with_runtime("triton-1", "gpu"), with_runtime("kata-1", "kata"), with_runtime("t2", "gpu")]
    cluster = FakeCluster([gpu_node(GPU_A, taints=[GPU_TAINT])], pods,
                          runtime_classes={"gpu": "nvidia", "kata": "kata-qemu"})
    decisions, warnings = plan(cluster)
    assert decisions == {"triton-1": (STAY, "gpu-runtime"), "t2": (STAY, "gpu-runtime"),
                         "kata-1": (MOVE, "not-tolerated")}
    assert cluster.reads.count("runtime classes") == 1 and warnings == []


def test_runtime_classes_that_cannot_be_read_are_one_warning_and_the_name_decides():
    forbidden = api_error('runtimeclasses.node.k8s.io is forbidden: User "u" cannot list resource '
                          '"runtimeclasses"', status=403)
    pods = [with_runtime("triton-1", "nvidia"), with_runtime("triton-2", "nvidia"),
            with_runtime("gvisor-1", "gvisor")]
    cluster = FakeCluster([gpu_node(GPU_A, taints=[GPU_TAINT])], pods, runtime_classes_error=forbidden)
    decisions, warnings = plan(cluster)
    assert decisions == {"triton-1": (STAY, "gpu-runtime"), "triton-2": (STAY, "gpu-runtime"),
                         "gvisor-1": (MOVE, "not-tolerated")}
    assert len(warnings) == 1 and warnings[0].startswith("cannot read the RuntimeClasses")
    assert "cannot list resource" in warnings[0]
