"""Dynamic Resource Allocation: is a pod's ResourceClaim a GPU?

Pure.  A pod asks for DRA devices through ``spec.resourceClaims``: each entry names a
ResourceClaim (``resourceClaimName``) or a ResourceClaimTemplate, whose generated claim
the pod's ``status.resourceClaimStatuses`` names.  What the claim holds decides:

- allocated (``status.allocation.devices.results[].driver``): a device from a GPU driver
  makes the pod a GPU consumer; devices of other drivers (a NIC, say) do not;
- not allocated yet: the requests' DeviceClass names decide when they are known GPU classes;
- anything else (the claim not read, not found, an unknown class): ``UNKNOWN``, and the
  planner keeps the pod, as it kept every pod with claims before claims were read.

``claims`` maps (namespace, claim name) to the claim, or to None when it does not exist;
``None`` for the whole map means the claims could not be read at all (RBAC, no DRA API).
"""

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

Obj = Dict[str, Any]
Claims = Mapping[Tuple[str, str], Optional[Obj]]

GPU = "gpu"
OTHER = "other"
UNKNOWN = "unknown"

# DRA drivers whose devices are GPUs (NVIDIA's dra-driver-gpu, AMD's and Intel's GPU drivers).
# NVIDIA's MIG and VFIO classes (mig.nvidia.com, vfio.gpu.nvidia.com) select devices of
# gpu.nvidia.com, so an allocated MIG slice shows that driver too.
GPU_DRIVERS = frozenset({"gpu.nvidia.com", "gpu.amd.com", "gpu.intel.com"})
# DeviceClasses that only ever select GPU devices, for claims not allocated yet: NVIDIA's
# chart's classes and the per-profile classes named after them (mig-1g-12gb.gpu.nvidia.com).
GPU_CLASSES = frozenset({"gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com",
                         "gpu.amd.com", "gpu.intel.com"})


@dataclass(frozen=True)
class ClaimVerdict:
    entry: str     # the pod's spec.resourceClaims[].name
    claim: str     # the ResourceClaim's name; "" when not known yet
    kind: str      # GPU, OTHER or UNKNOWN
    what: str      # the drivers or classes it holds, or why it is UNKNOWN

    def __str__(self) -> str:
        return f"{self.claim or self.entry} ({self.what})"


def is_gpu_driver(driver: str) -> bool:
    return driver in GPU_DRIVERS


def is_gpu_class(name: str) -> bool:
    return name in GPU_CLASSES or name.endswith(".gpu.nvidia.com")


def claim_names(pod: Obj) -> List[Tuple[str, str]]:
    """(entry, claim name) for each of the pod's claims; the name is "" when a template's
    claim has not been generated (or recorded) yet."""
    generated = {s.get("name"): s.get("resourceClaimName") or ""
                 for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()}
    found = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
        name = entry.get("name", "")
        found.append((name, entry.get("resourceClaimName") or generated.get(name, "")))
    return found


def _requested_classes(claim: Obj) -> List[str]:
    """The DeviceClasses a claim asks for: v1 and v1beta2 nest them under ``exactly`` or
    ``firstAvailable``; v1beta1 puts ``deviceClassName`` on the request itself."""
    classes = []
    for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
        if request.get("deviceClassName"):
            classes.append(request["deviceClassName"])
        if (request.get("exactly") or {}).get("deviceClassName"):
            classes.append(request["exactly"]["deviceClassName"])
        classes += [s["deviceClassName"] for s in request.get("firstAvailable") or ()
                    if s.get("deviceClassName")]
    return classes


def judge_claim(claim: Obj) -> Tuple[str, str]:
    """(kind, what) of one ResourceClaim, by what it holds or, before allocation, asks for."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or ()
    drivers = sorted({r.get("driver", "") for r in results if r.get("driver")})
    if drivers:
        kind = GPU if any(is_gpu_driver(d) for d in drivers) else OTHER
        return kind, "allocated from " + ", ".join(drivers)
    classes = sorted(set(_requested_classes(claim)))
    if classes and all(is_gpu_class(c) for c in classes):
        return GPU, "asks for " + ", ".join(classes)
    if classes:
        return UNKNOWN, "not allocated; asks for " + ", ".join(classes)
    return UNKNOWN, "not allocated"


def judge(pod: Obj, claims: Optional[Claims]) -> List[ClaimVerdict]:
    """A verdict per claim of the pod (empty for a pod without claims)."""
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    verdicts = []
    for entry, name in claim_names(pod):
        if claims is None:
            verdicts.append(ClaimVerdict(entry, name, UNKNOWN, "claims not readable"))
        elif not name:
            verdicts.append(ClaimVerdict(entry, name, UNKNOWN, "claim not generated yet"))
        else:
            claim = claims.get((namespace, name))
            verdicts.append(ClaimVerdict(entry, name, *judge_claim(claim)) if claim is not None
                            else ClaimVerdict(entry, name, UNKNOWN, "claim not found"))
    return verdicts


def wanted(pods: List[Obj]) -> List[Tuple[str, str]]:
    """The (namespace, claim name) pairs to read for these pods, sorted, without duplicates."""
    return sorted({((p.get("metadata") or {}).get("namespace", ""), name)
                   for p in pods for _, name in claim_names(p) if name})
