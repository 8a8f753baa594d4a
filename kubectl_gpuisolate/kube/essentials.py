"""What is kept of each listed object, as its page arrives: the parts the commands read, in the
same shape, and for a large cluster one object per distinct value of the parts that repeat.

Owns: the planner's part of a pod (``pod``), the commands' part of a listed node (``node``), the
landing check's part of a node (``landing_node``), a pod as its requests (``requests_only``), and
``Shared``, which makes equal repeated parts one object.  Nothing downstream mutates an object it
was given (writes build new ones: api.merge_patch copies), which is what makes sharing safe.
"""

from typing import Any, Dict

from ..core import gpu, hidden_gpu

# What the planner reads of a pod (planner.decide, gpu.pod_*, taints.tolerates_all,
# selectors for PDBs).  Keeping only this, as each node's pods arrive, holds a large
# cluster's GPU nodes in a fraction of the memory of whole pods.  core/pod_fields.py declares
# what each rule reads; tests/unit/core/test_pod_fields.py fails if this drops any of it.
_POD_METADATA = ("name", "namespace", "uid", "resourceVersion", "labels", "ownerReferences",
                 "deletionTimestamp")   # resourceVersion: the eviction's precondition
_POD_SPEC = ("nodeName", "tolerations", "resourceClaims", "nodeSelector", "affinity", "runtimeClassName")
_MIRROR = "kubernetes.io/config.mirror"
_ANNOTATIONS = (_MIRROR,) + gpu.FRACTION_ANNOTATIONS   # the ones the rules read
_SHARED_PARTS = ("labels", "tolerations", "nodeSelector", "affinity")
# Of each container: its requests, and the environment and name core/hidden_gpu reads.
_CONTAINER = ("name", "resources", "env")

# What no command reads of a listed node, and most of its size: the field managers' records,
# the kubelet's conditions, addresses, endpoints, system info and image list.  (A node read
# alone, by get_node, stays whole: taint's check of who removed its taint reads managedFields.)
_NODE_METADATA_UNREAD = ("managedFields",)
_NODE_STATUS_UNREAD = ("conditions", "addresses", "daemonEndpoints", "nodeInfo", "images",
                       "volumesInUse", "volumesAttached", "config", "runtimeHandlers", "features")


class Shared:
    """One object for each distinct value of the parts that repeat from object to object
    (tolerations, requests, status, a ReplicaSet's labels and owner, a pool's capacity and
    taints, namespaces, label values), for one read: at 5,000 nodes the nodes and the GPU nodes'
    pods are most of the plugin's memory.  Threads may race, which at worst keeps two equal
    copies."""

    def __init__(self):
        self._parts: Dict[int, Any] = {}
        self._strings: Dict[str, str] = {}

    def string(self, value):
        return self._strings.setdefault(value, value) if isinstance(value, str) else value

    def part(self, value):
        # Keyed by the hash of its repr, not the repr: keeping the reprs of parts that do not
        # repeat (labels with a pod's own hash) would cost what sharing saves.
        key = hash(repr(value))
        kept = self._parts.setdefault(key, value)
        return kept if kept is value or kept == value else value

    def strings(self, mapping):
        """A dict of strings with each key and value kept once (node labels: most repeat)."""
        return {self.string(k): self.string(v) for k, v in mapping.items()}


class _Unshared:
    """Shared's interface, keeping every value as it is."""

    @staticmethod
    def string(value):
        return value

    @staticmethod
    def part(value):
        return value

    @staticmethod
    def strings(mapping):
        return mapping


AS_IS = _Unshared()


def pod(whole, share=AS_IS):
    """The planner's part of a pod, as a plain dict of the same shape; ``share``: a Shared,
    for one object per distinct repeated part."""
    meta, spec = whole.get("metadata") or {}, whole.get("spec") or {}
    slim_meta = {k: share.part(meta[k]) if k in _SHARED_PARTS else meta[k]
                 for k in _POD_METADATA if k in meta}
    if "namespace" in slim_meta:
        slim_meta["namespace"] = share.string(slim_meta["namespace"])
    if meta.get("ownerReferences"):     # one ReplicaSet's pods are seldom on one GPU node
        slim_meta["ownerReferences"] = share.part(
            [{k: share.string(v) for k, v in ref.items()} for ref in meta["ownerReferences"]])
    annotations = meta.get("annotations") or {}
    kept = {k: v for k, v in annotations.items() if k in _ANNOTATIONS or k.startswith(hidden_gpu.CDI_PREFIX)}
    if kept:
        slim_meta["annotations"] = share.part(kept)
    slim_spec = {k: share.part(spec[k]) if k in _SHARED_PARTS else share.string(spec[k])
                 for k in _POD_SPEC if k in spec}
    volumes = [v for v in spec.get("volumes") or ()
               if "emptyDir" in v or "persistentVolumeClaim" in v or "hostPath" in v]
    if volumes:
        slim_spec["volumes"] = share.part(volumes)
    for key in hidden_gpu.CONTAINER_KINDS:
        if spec.get(key):
            slim_spec[key] = share.part([{k: c[k] for k in _CONTAINER if k in c} for c in spec[key]])
    slim = {"metadata": slim_meta, "spec": slim_spec}
    status = whole.get("status") or {}
    slim_status = {k: status[k] for k in ("phase", "resourceClaimStatuses") if status.get(k)}
    if slim_status:
        slim["status"] = share.part(slim_status)
    return slim


def node(whole, share=AS_IS):
    """A listed node without what no command reads (same shape, fewer keys)."""
    meta = whole.get("metadata") or {}
    status = whole.get("status") or {}
    slim_meta = {k: v for k, v in meta.items() if k not in _NODE_METADATA_UNREAD}
    if meta.get("labels"):
        slim_meta["labels"] = share.strings(meta["labels"])
    if meta.get("annotations"):
        slim_meta["annotations"] = share.part(meta["annotations"])
    slim = dict(whole, metadata=slim_meta)
    if "spec" in whole:
        slim["spec"] = share.part(whole["spec"])    # a pool's taints, or none
    if status:
        slim["status"] = {k: share.part(v) for k, v in status.items()
                          if k not in _NODE_STATUS_UNREAD}
    return slim


def landing_node(whole):
    """What the landing check reads of a node: its name, labels, spec, capacity, allocatable."""
    meta, status = whole.get("metadata") or {}, whole.get("status") or {}
    return {"metadata": {k: meta[k] for k in ("name", "labels") if k in meta},
            "spec": whole.get("spec") or {},
            "status": {k: status[k] for k in ("capacity", "allocatable") if k in status}}


def requests_only(whole):
    """A pod as its uid, controller UID, node, and what its requests are made of."""
    meta, spec = whole.get("metadata") or {}, whole.get("spec") or {}
    slim_spec = {k: spec[k] for k in ("nodeName", "overhead") if spec.get(k)}
    for key in ("containers", "initContainers"):
        if spec.get(key):
            slim_spec[key] = [
                dict({"resources": {"requests": (c.get("resources") or {}).get("requests") or {}}},
                     **({"restartPolicy": c["restartPolicy"]} if c.get("restartPolicy") else {}))
                for c in spec[key]]
    if (spec.get("resources") or {}).get("requests"):
        slim_spec["resources"] = {"requests": spec["resources"]["requests"]}
    slim_meta = {"uid": meta.get("uid", "")}
    owners = [{"uid": r.get("uid", ""), "controller": True}
              for r in meta.get("ownerReferences") or () if r.get("controller")]
    if owners:
        slim_meta["ownerReferences"] = owners
    return {"metadata": slim_meta, "spec": slim_spec}
