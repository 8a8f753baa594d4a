"""The planner's cases for GPU users that ask for no GPU (core/hidden_gpu.py): part of
test_planner.DECISION_CASES, so that every table test (the rules' rows, the declared reads, the
essentials projection) runs them too."""

import copy

import pytest

from kubectl_gpuisolate.core.planner import MOVE, STAY

from ..factories import GPU_TOLERATION, pod

BYPASS = "bypassing the device plugin's accounting"


def case(id, the_pod, action, reason, *, warning=None, message=None, **kwargs):
    """A hidden GPU user stays, always warned that it bypasses the accounting."""
    if warning is None:
        warning = BYPASS if action == STAY else ""
    return pytest.param(the_pod, kwargs, action, reason, (), warning, (), message, id=id)


def with_spec(the_pod=None, **spec):
    the_pod = copy.deepcopy(the_pod or pod())
    the_pod["spec"].update(spec)
    return the_pod


def with_env(*entries, kind="containers", the_pod=None):
    the_pod = copy.deepcopy(the_pod or pod())
    if kind == "containers":
        the_pod["spec"]["containers"][0]["env"] = list(entries)
    else:
        the_pod["spec"][kind] = [{"name": "helper", "image": "busybox", "env": list(entries)}]
    return the_pod


def env(name, value):
    return {"name": name, "value": value}


FROM_CONFIGMAP = {"name": "NVIDIA_VISIBLE_DEVICES",
                  "valueFrom": {"configMapKeyRef": {"name": "gpu-config", "key": "devices"}}}

HIDDEN_GPU_CASES = [
    case("env-nvidia-all", with_env(env("NVIDIA_VISIBLE_DEVICES", "all")), STAY, "gpu-env",
         message="uses GPUs without a request: NVIDIA_VISIBLE_DEVICES=all (container main)",
         warning=BYPASS),
    case("env-nvidia-index-tolerated", with_env(env("NVIDIA_VISIBLE_DEVICES", "0,1"),
                                                the_pod=pod(tolerations=[GPU_TOLERATION])),
         STAY, "gpu-env", warning=BYPASS),
    case("env-in-an-init-container", with_env(env("NVIDIA_VISIBLE_DEVICES", "all"), kind="initContainers"),
         STAY, "gpu-env", message="(container helper)"),
    case("env-in-an-ephemeral-container",
         with_env(env("NVIDIA_VISIBLE_DEVICES", "all"), kind="ephemeralContainers"), STAY, "gpu-env"),
    case("env-amd", with_env(env("ROCR_VISIBLE_DEVICES", "0")), STAY, "gpu-env",
         message="ROCR_VISIBLE_DEVICES=0"),
    case("env-habana", with_env(env("HABANA_VISIBLE_DEVICES", "all")), STAY, "gpu-env"),
    case("env-from-a-configmap", with_env(FROM_CONFIGMAP), STAY, "gpu-env",
         warning="comes from configMapKeyRef, which is not read: kept as a GPU user"),
    case("env-void", with_env(env("NVIDIA_VISIBLE_DEVICES", "void")), MOVE, "not-tolerated"),
    case("env-none", with_env(env("NVIDIA_VISIBLE_DEVICES", "None")), MOVE, "not-tolerated"),
    case("env-empty", with_env(env("NVIDIA_VISIBLE_DEVICES", "")), MOVE, "not-tolerated"),
    case("env-other-variable", with_env(env("CUDA_VISIBLE_DEVICES", "0")), MOVE, "not-tolerated"),
    case("runtime-nvidia-unread", with_spec(runtimeClassName="nvidia"), STAY, "gpu-runtime",
         message="RuntimeClass nvidia",
         warning="RuntimeClass nvidia could not be read: judged by its name, a GPU runtime"),
    case("runtime-by-handler", with_spec(runtimeClassName="gpu"), STAY, "gpu-runtime",
         runtime_classes={"gpu": "nvidia-cdi"}, message="RuntimeClass gpu (handler nvidia-cdi)",
         warning=BYPASS),
    case("runtime-other-handler", with_spec(runtimeClassName="nvidia-looking"), MOVE, "not-tolerated",
         runtime_classes={"nvidia-looking": "runc"}),
    case("runtime-kata-unread", with_spec(runtimeClassName="kata-qemu"), MOVE, "not-tolerated"),
    case("runtime-missing-from-the-list", with_spec(runtimeClassName="nvidia"), STAY, "gpu-runtime",
         runtime_classes={}, warning=BYPASS),
    case("cdi-annotation", pod(annotations={"cdi.k8s.io/gpu": "nvidia.com/gpu=all", "team": "ml"}),
         STAY, "gpu-cdi", message="CDI device nvidia.com/gpu=all (annotation cdi.k8s.io/gpu)"),
    case("device-mount-nvidia", pod(volumes=[{"name": "dev", "hostPath": {"path": "/dev/nvidia0"}}]),
         STAY, "gpu-device-mount", message="the NVIDIA device /dev/nvidia0"),
    case("device-mount-dri", pod(volumes=[{"name": "dri", "hostPath": {"path": "/dev/dri/"}}]),
         STAY, "gpu-device-mount", message="/dev/dri"),
    case("device-mount-neuron", pod(volumes=[{"name": "n", "hostPath": {"path": "/dev/neuron3"}}]),
         STAY, "gpu-device-mount"),
    case("device-mount-kfd", pod(volumes=[{"name": "k", "hostPath": {"path": "/dev/kfd"}}]),
         STAY, "gpu-device-mount", message="the AMD device /dev/kfd"),
    case("host-path-not-a-device", pod(volumes=[{"name": "logs", "hostPath": {"path": "/var/log"}},
                                                {"name": "d", "hostPath": {"path": "/dev/drivers"}}]),
         MOVE, "not-tolerated"),
]
