"""Where the API server's version changes what the plugin does: the one place that says so.

Pure.  The support window is Kubernetes 1.31 to 1.37 (the README lists the versions the
e2e tier runs on).  Across it:

- **Dynamic Resource Allocation** is served as ``resource.k8s.io/v1beta1`` (1.32, off by
  default), ``v1beta2`` (1.33, off by default) and ``v1`` (GA and on from 1.34).  The
  plugin asks the server which versions it serves (``GET /apis/resource.k8s.io``) and
  reads claims in the newest (``dra_api_version``), as NVIDIA's DRA driver chooses.  Where
  none is served no pod can carry claims.  A claim's request names its DeviceClass under
  ``exactly`` (v1beta2, v1) or on the request (v1beta1): core/claims.py reads both; the
  allocation's ``results[].driver`` is the same in every version.
- **Evictions** answer the same across the window (policy/v1: 429 for a PDB that allows no
  disruption, 500 for a pod covered by several PDBs, 404 for a pod already gone);
  ``unhealthyPodEvictionPolicy`` is GA from 1.31, so every server in the window honours
  it and core/disruption.py reads it without a version check.
- **The taint-eviction controller** (NoExecute) is its own controller from 1.29; the plugin
  only lists what a NoExecute taint would delete, which does not depend on who deletes.
- **Warnings**: every server in the window sends ``Warning`` headers (kube/trace.py prints
  them as kubectl does) and accepts ``dryRun=All``.

``status -o json`` records the server's version (``serverVersion``).
"""

from typing import Any, Dict, Iterable, Optional, Tuple

DRA_GROUP = "resource.k8s.io"
DRA_API_PREFERENCE: Tuple[str, ...] = ("v1", "v1beta2", "v1beta1")


def dra_api_version(served: Iterable[str]) -> Optional[str]:
    """The version of resource.k8s.io to read claims in: the newest served, None if none."""
    have = set(served)
    return next((v for v in DRA_API_PREFERENCE if v in have), None)


def git_version(version_info: Optional[Dict[str, Any]]) -> str:
    """The server's release as ``GET /version`` reports it ("v1.33.5"), "" when unknown."""
    return str((version_info or {}).get("gitVersion") or "")
