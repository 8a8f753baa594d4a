"""GPU users that ask for no GPU: the forms in which a pod reaches a node's accelerators without a
resource request, so that the device plugin (and the scheduler) do not count it.

Pure.  Each form is one function ``(pod, ...) -> [Use]``, read by one planner rule:
- a container's environment that hands it the devices (``VISIBLE_DEVICES``: the NVIDIA container
  toolkit's NVIDIA_VISIBLE_DEVICES, AMD's ROCR_VISIBLE_DEVICES, Habana's HABANA_VISIBLE_DEVICES),
  set to anything but "void", "none" or empty; from ``valueFrom`` (a ConfigMap, a Secret, a field)
  it cannot be read here, so it counts, with a note (the conservative rule);
- a RuntimeClass whose handler is NVIDIA's (``nvidia``, ``nvidia-cdi``, ``nvidia-legacy``, Kata's
  ``kata-qemu-nvidia-gpu``): judged by its name when the RuntimeClasses could not be read;
- a CDI device annotation (``cdi.k8s.io/...``), which container runtimes turn into devices;
- a hostPath volume of a device node (``DEVICE_PATHS``).
"""

from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

from .gpu import Obj

# Environment variables that give a container the node's devices (NVIDIA's, AMD's, Habana's).
VISIBLE_DEVICES = frozenset({"NVIDIA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HABANA_VISIBLE_DEVICES"})
NO_DEVICES = frozenset({"", "void", "none"})
NVIDIA_RUNTIME = "nvidia"           # a handler or (unread) RuntimeClass name holding it
CDI_PREFIX = "cdi.k8s.io/"
# hostPath prefixes of accelerator device nodes: a path is one when it starts with the prefix
# and, for the exact ones (a trailing "/" or end), is that directory or under it.
DEVICE_PATHS: Tuple[Tuple[str, str], ...] = (
    ("/dev/nvidia", "NVIDIA"),        # /dev/nvidia0, /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-caps
    ("/dev/dri/", "DRI (Intel/AMD)"),
    ("/dev/kfd/", "AMD"),
    ("/dev/neuron", "AWS Neuron"),
    ("/dev/accel", "accelerator"),    # the kernel's accel subsystem (/dev/accel/accel0), Habana
)
CONTAINER_KINDS = ("initContainers", "containers", "ephemeralContainers")


@dataclass(frozen=True)
class Use:
    """One way the pod reaches the devices: ``what`` for its verdict, ``note`` when it was
    judged without being read (then also a warning of its own)."""
    what: str
    note: str = ""


def _containers(pod: Obj) -> Iterator[Obj]:
    spec = pod.get("spec") or {}
    for kind in CONTAINER_KINDS:
        yield from spec.get(kind) or ()


def env_uses(pod: Obj) -> List[Use]:
    """Containers (init, sidecar and ephemeral ones included) whose environment hands them devices."""
    found = []
    for container in _containers(pod):
        for entry in container.get("env") or ():
            name = entry.get("name")
            if name not in VISIBLE_DEVICES:
                continue
            where = f"container {container.get('name', '?')}"
            if "valueFrom" in entry:
                source = ", ".join(sorted(entry["valueFrom"] or {})) or "valueFrom"
                found.append(Use(f"{name} from {source} ({where})",
                                 note=f"{name} of {where} comes from {source}, which is not read: "
                                      "kept as a GPU user"))
            elif str(entry.get("value", "")).strip().lower() not in NO_DEVICES:
                found.append(Use(f"{name}={entry.get('value')} ({where})"))
    return found


def runtime_uses(pod: Obj, runtime_classes: Optional[Dict[str, str]]) -> List[Use]:
    """The pod's RuntimeClass when its handler is NVIDIA's.  ``runtime_classes``: {name: handler},
    None when they could not be read (then, and for a class not in it, the name decides)."""
    name = (pod.get("spec") or {}).get("runtimeClassName")
    if not name:
        return []
    handler = (runtime_classes or {}).get(name)
    if handler is not None:
        return [Use(f"RuntimeClass {name} (handler {handler})")] if NVIDIA_RUNTIME in handler else []
    if NVIDIA_RUNTIME not in name.lower():
        return []
    note = "" if runtime_classes is not None else (
        f"RuntimeClass {name} could not be read: judged by its name, a GPU runtime")
    return [Use(f"RuntimeClass {name}", note=note)]


def cdi_uses(pod: Obj) -> List[Use]:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    # The keys first, then only the CDI ones' values (core/pod_fields.py declares just those).
    return [Use(f"CDI device {annotations[key]} (annotation {key})")
            for key in sorted(annotations) if key.startswith(CDI_PREFIX)]


def is_device_path(path: str) -> Optional[str]:
    """The vendor of a hostPath that is an accelerator's device node, else None."""
    for prefix, vendor in DEVICE_PATHS:
        if prefix.endswith("/"):
            if path == prefix[:-1] or path.startswith(prefix):
                return vendor
        elif path.startswith(prefix):
            return vendor
    return None


def device_mount_uses(pod: Obj) -> List[Use]:
    found = []
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        path = ((volume.get("hostPath") or {}).get("path") or "").rstrip("/") or "/"
        vendor = is_device_path(path)
        if vendor:
            found.append(Use(f"the {vendor} device {path} (a hostPath volume)"))
    return found


def uses(pod: Obj, runtime_classes: Optional[Dict[str, str]] = None) -> List[Use]:
    """Every form above the pod uses (``runtime_classes`` as in runtime_uses)."""
    return (env_uses(pod) + runtime_uses(pod, runtime_classes) + cdi_uses(pod)
            + device_mount_uses(pod))
