"""What each of the planner's steps reads of a pod, as dotted paths (``[]``: every item of a
list; a path covers what is under it).

Production plans see only what kube/essentials.py keeps of a pod, while the planner's tests
use whole pods: a rule that read a field the projection drops would pass every test and never
fire.  So the reads are declared here, beside planner.RULES, and tests/unit/core/
test_pod_fields.py checks both ends: every read of every rule on the planner's case table is
declared, and essentials keeps every declared field as it was.  A new rule is a row here too.
"""

from typing import Dict, Tuple

from .gpu import FRACTION_ANNOTATIONS
from .hidden_gpu import CDI_PREFIX, CONTAINER_KINDS

_MIRROR = "metadata.annotations.kubernetes.io/config.mirror"
_RESOURCES = ("spec.containers[].resources", "spec.initContainers[].resources")
# Where an identical pod could land (core/landing.py), and whose replacement it would be.
_LANDING = ("metadata.ownerReferences", "metadata.namespace", "spec.nodeName", "spec.nodeSelector",
            "spec.affinity", "spec.tolerations", "spec.volumes[].persistentVolumeClaim",
            "spec.volumes[].emptyDir") + _RESOURCES

# Every container's environment and name (core/hidden_gpu.env_uses).
_ENV = tuple(f"spec.{kind}[].{part}" for kind in CONTAINER_KINDS for part in ("env", "name"))

POD_FIELDS: Dict[str, Tuple[str, ...]] = {
    # planner.rule_context, which every rule reads through (ctx.decision included)
    "rule_context": ("metadata.name", "metadata.namespace", "metadata.uid",
                     "metadata.resourceVersion", "metadata.ownerReferences", "spec.tolerations"),
    "terminating": ("metadata.deletionTimestamp",),
    "mirror": (_MIRROR,),
    "daemonset": ("metadata.ownerReferences",),
    "finished": ("status.phase",),
    "gpu_request": _RESOURCES,
    "gpu_shared": _RESOURCES,
    "gpu_mig": _RESOURCES,
    "accelerator": _RESOURCES,
    "gpu_fraction": tuple(f"metadata.annotations.{a}" for a in FRACTION_ANNOTATIONS),
    "resource_claim": ("metadata.namespace", "spec.resourceClaims", "status.resourceClaimStatuses"),
    "gpu_env": _ENV,
    "gpu_runtime": ("spec.runtimeClassName",),
    # KEY{PREFIX}: the keys of the mapping at KEY, and the values of those starting with PREFIX
    "gpu_cdi": (f"metadata.annotations{{{CDI_PREFIX}}}",),
    "gpu_device_mount": ("spec.volumes[].hostPath",),
    "tolerated": ("metadata.labels.pod-template-hash",),   # names the Deployment in its warning
    "asks_for_gpu": _LANDING,
    "nowhere_to_land": _LANDING,
    "gated_or_move": _LANDING + ("metadata.labels",),   # labels: the PDBs' selectors
}
