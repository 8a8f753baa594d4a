"""What the plugin asks of the API server: nodes, pods, PDBs, DaemonSets, evictions, watches,
events.

Owns: resourceVersion-guarded node taint writes, pod lists by node (from the watch cache when
an earlier consistent read allows it), evictions with a UID precondition, watches of a node's
pods, access reviews, Events on pods, and loading the kubeconfig (or the in-cluster config)
into a connection.  Every write that changes the cluster takes the one dry-run value
(``core.dryrun.DryRun``); an Event records what a run did, so a dry run writes none (its caller,
``evacuation.audit``, does not call ``create_event``).  ``Kube`` has a Transport and offers
only these calls (``kube.KubeApi``): nothing above it sends raw requests.
"""

import json
import os
import random
import time
from typing import Any, Dict

from ..core import server_versions
from ..core.dryrun import DryRun
from ..errors import (
    ApiError,
    ApiNotFound,
    ConfigError,
    Conflict,
    ConflictError,
    ConnectionFailed,
    NotFound,
    TooManyRequests,
)
from . import essentials
from .policies import AdmissionPolicies
from .retry import NODE_WRITES
from .transport import USER_AGENT, Transport, retryable

# Where a controller's object lives: what the landing check reads of a pod template.
CONTROLLER_PATHS = {
    "ReplicaSet": "/apis/apps/v1/namespaces/{namespace}/replicasets/{name}",
    "StatefulSet": "/apis/apps/v1/namespaces/{namespace}/statefulsets/{name}",
    "ReplicationController": "/api/v1/namespaces/{namespace}/replicationcontrollers/{name}",
    "Job": "/apis/batch/v1/namespaces/{namespace}/jobs/{name}",
}
_UNREAD = object()
COMPONENT = "kubectl-gpuisolate"          # an Event's source.component and reportingComponent
# The field manager the API server records for our writes (no fieldManager is sent: it is the
# User-Agent's name); taint's check of who removed a taint must not name it.
FIELD_MANAGER = USER_AGENT.split("/", 1)[0]


class Kube(AdmissionPolicies):
    """The API calls of the plugin, on one connection (``transport``).  ``sleep`` and ``rng``
    are the clock and jitter of the node-write retries.  The guard's calls are the mixin's."""

    field_manager = FIELD_MANAGER           # named explicitly only by server-side apply

    def __init__(self, transport, *, sleep=time.sleep, rng=random):
        self._transport = transport
        self._sleep, self._rng = sleep, rng
        self._dra = _UNREAD      # the resource.k8s.io version to read claims in, once asked

    def warning_count(self):
        """How many distinct Warning headers the server sent (for --warnings-as-errors)."""
        return self._transport.warnings.count

    # -- nodes ---------------------------------------------------------------------------------
    def list_nodes(self, selector=None, *, limit=None, retry=True):
        """One page of nodes (``limit``) or all of them; ``retry=False`` for completion,
        which must answer within its budget or not at all."""
        params = {"labelSelector": selector} if selector else {}
        if limit:
            body = self._transport.request("GET", "/api/v1/nodes", params=dict(params, limit=limit),
                                           retry=retry, what="listing nodes").json()
            return body.get("items") or []
        return self._transport.list_all("/api/v1/nodes", params, what="listing nodes")[0]

    def list_nodes_with_version(self, selector=None):
        """(nodes, resourceVersion of the list): a consistent read, as kubectl's; each node kept
        as ``essentials.node`` keeps it as its page arrives."""
        params = {"labelSelector": selector} if selector else {}
        share = essentials.Shared()
        return self._transport.list_all("/api/v1/nodes", params, what="listing nodes",
                                        keep=lambda node: essentials.node(node, share))

    def get_node(self, name):
        try:
            return self._transport.get(f"/api/v1/nodes/{name}", what=f"reading node {name}")
        except ApiNotFound:
            raise NotFound(f'node "{name}" not found; check the name with '
                           "'kubectl get nodes'") from None

    def patch_node(self, node, patch, *, dry_run, retry=True):
        """A JSON merge patch; a resourceVersion in the patch makes it conditional."""
        name = node["metadata"]["name"]
        if dry_run is DryRun.CLIENT:
            return merge_patch(node, patch)
        params = {"dryRun": "All"} if dry_run is DryRun.SERVER else None
        return self._transport.request("PATCH", f"/api/v1/nodes/{name}", params=params, body=patch,
                                       content_type="application/merge-patch+json", retry=retry,
                                       what=f"patching node {name}").json()

    def update_node_taints(self, name, compute, *, dry_run, attempts=8):
        """Re-reads the node and writes ``compute(taints)`` guarded by resourceVersion.

        ``compute`` returns ``(new_taints, verb)``, or ``(None, verb)`` when
        nothing needs writing.  A conflict (another writer) means: read again
        and recompute, so concurrent changes to other taints are never lost.
        Returns ``(node, verb)``.
        """
        first_verb, failure = None, None
        for attempt in range(attempts):
            node = self.get_node(name)
            new_taints, verb = compute(node.get("spec", {}).get("taints") or [])
            if new_taints is None:
                # A write whose answer was lost may have landed already.
                return node, first_verb or verb
            patch = {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                     "spec": {"taints": new_taints or None}}
            try:
                # Not retried inside request(): a retry of a write that landed unseen gets 409,
                # which must not pass for another writer's change.
                return self.patch_node(node, patch, dry_run=dry_run, retry=False), verb
            except Conflict as exc:
                failure, wait = None, exc.retry_after      # another writer: read, recompute
            except (ApiError, ConnectionFailed) as exc:
                if not retryable(exc):
                    raise
                failure, wait = exc, getattr(exc, "retry_after", None)
                if not isinstance(exc, TooManyRequests):  # 5xx or no answer: it may have landed
                    first_verb = first_verb or verb
            if attempt < attempts - 1:
                self._sleep(NODE_WRITES.delay(attempt, self._rng, wait))
        if failure is not None:
            raise failure
        raise ConflictError(f"node {name} kept changing while writing its taints "
                            f"({attempts} attempts); try again")

    # -- pods, PDBs, DaemonSets ------------------------------------------------------------------
    def list_pods_on_node(self, node_name, not_older_than=None):
        """The node's pods (server-side field selector).  ``not_older_than``, the
        resourceVersion of an earlier consistent read, lets the API server answer from its
        watch cache at once instead of first catching up with etcd, as each consistent
        read must (hundreds of lists on a large cluster)."""
        return self.list_pods_on_node_with_version(node_name, not_older_than)[0]

    def list_pods_on_node_with_version(self, node_name, not_older_than=None):
        """(the node's pods, resourceVersion of the list), as ``list_pods_on_node``."""
        params = {"fieldSelector": f"spec.nodeName={node_name}"}
        if not_older_than:
            params.update(resourceVersion=not_older_than, resourceVersionMatch="NotOlderThan")
        return self._transport.list_all("/api/v1/pods", params,
                                        what=f"listing pods on node {node_name}")

    def get_pod(self, namespace, name):
        return self._transport.get(f"/api/v1/namespaces/{namespace}/pods/{name}",
                                   what=f"reading pod {namespace}/{name}")

    def list_pod_requests(self, node_name=None):
        """The pods not Succeeded or Failed, cluster-wide in one paginated list (or only those
        bound to ``node_name``), each kept as ``essentials.requests_only`` keeps it as its page
        arrives: what the fit check reads (core/resources.py), in a fraction of the memory of
        whole pods."""
        selector = "status.phase!=Succeeded,status.phase!=Failed"
        if node_name is not None:
            selector = f"spec.nodeName={node_name},{selector}"
        what = f"listing pods on node {node_name}" if node_name is not None else "listing pods"
        return self._transport.list_all("/api/v1/pods", {"fieldSelector": selector}, what=what,
                                        keep=essentials.requests_only)[0]

    def list_unscheduled_pods(self):
        """The Pending pods bound to no node yet, cluster-wide (whole: there are few)."""
        params = {"fieldSelector": "spec.nodeName=,status.phase=Pending"}
        return self._transport.list_all("/api/v1/pods", params,
                                        what="listing unscheduled pods")[0]

    def list_pdbs(self):
        return self.list_pdbs_with_version()[0]

    def list_runtime_classes(self):
        """{RuntimeClass name: its handler}: one list, cluster-wide (there are a handful)."""
        found = self._transport.list_all("/apis/node.k8s.io/v1/runtimeclasses",
                                         what="listing RuntimeClasses")[0]
        return {c["metadata"]["name"]: c.get("handler", "") for c in found}

    def list_pdbs_with_version(self):
        """(every PodDisruptionBudget, resourceVersion of the list)."""
        return self._transport.list_all("/apis/policy/v1/poddisruptionbudgets",
                                        what="listing PodDisruptionBudgets")

    def daemonset_exists(self, namespace, name):
        try:
            self._transport.get(f"/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}",
                                what=f"reading DaemonSet {namespace}/{name}")
            return True
        except ApiNotFound:
            return False

    def list_daemonset_keys(self, at_most):
        """(namespace, name) of every DaemonSet, one page of ``at_most``; None when there are
        more (a small cluster's stand-in for its daemonset_exists GETs: kube.gather)."""
        def key(item):
            meta = item.get("metadata") or {}
            return meta.get("namespace", ""), meta.get("name", "")
        found = self._transport.list_all("/apis/apps/v1/daemonsets", what="listing DaemonSets",
                                         keep=key, at_most=at_most)
        return None if found is None else frozenset(found[0])

    def get_controller(self, namespace, kind, name):
        """A pod's controller (ReplicaSet, StatefulSet, ReplicationController or Job), for its pod
        template; None when it is gone or of another kind."""
        path = CONTROLLER_PATHS.get(kind)
        return self._get_or_none(path.format(namespace=namespace, name=name) if path else None,
                                 f"reading {kind} {namespace}/{name}")

    def list_template_pins(self, kind, at_most=None):
        """{(namespace, name): nodeName} of the ``kind`` controllers whose template sets one: a
        cluster-wide list, each page cut to the pins as it comes (not from the watch cache:
        resourceVersion 0 comes in one piece, +180 MB of RSS for 13,000 ReplicaSets).
        ``at_most``: one page of that many, and None when there are more."""
        path = CONTROLLER_PATHS[kind].replace("namespaces/{namespace}/", "").replace("/{name}", "")

        def pin(item):
            meta = item.get("metadata") or {}
            spec = ((item.get("spec") or {}).get("template") or {}).get("spec") or {}
            return meta.get("namespace", ""), meta.get("name", ""), spec.get("nodeName")
        found = self._transport.list_all(path, what=f"listing {kind}s", keep=pin, at_most=at_most)
        return None if found is None else {(ns, name): node for ns, name, node in found[0] if node}

    def get_pvc(self, namespace, name):
        """A PersistentVolumeClaim, or None when it does not exist."""
        return self._get_or_none(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}",
                                 f"reading PersistentVolumeClaim {namespace}/{name}")

    def get_pv(self, name):
        """A PersistentVolume, or None when it does not exist."""
        return self._get_or_none(f"/api/v1/persistentvolumes/{name}",
                                 f"reading PersistentVolume {name}")

    def get_resource_claim(self, namespace, name):
        """A DRA ResourceClaim, in the newest resource.k8s.io version the server serves
        (core.server_versions), or None when it does not exist."""
        version = self._dra_version()
        if version is None:
            raise NotFound(f"the server serves no {server_versions.DRA_GROUP} API, so ResourceClaim "
                           f"{namespace}/{name} cannot be read")
        return self._get_or_none(f"/apis/{server_versions.DRA_GROUP}/{version}/namespaces/{namespace}"
                                 f"/resourceclaims/{name}", f"reading ResourceClaim {namespace}/{name}")

    def _dra_version(self):
        if self._dra is _UNREAD:
            group = self._get_or_none(f"/apis/{server_versions.DRA_GROUP}",
                                      f"reading the {server_versions.DRA_GROUP} API versions")
            served = [v.get("version", "") for v in (group or {}).get("versions") or ()]
            self._dra = server_versions.dra_api_version(served)
        return self._dra

    def server_version(self):
        """The server's release ("v1.33.5"), as ``kubectl version`` reads it."""
        return server_versions.git_version(self._transport.get("/version", what="reading the server version"))

    def _get_or_none(self, path, what):
        if path is None:
            return None
        try:
            return self._transport.get(path, what=what)
        except ApiNotFound:
            return None

    def can_i(self, verb, resource, *, group="", subresource="", namespace="", name=""):
        """A SelfSubjectAccessReview: True or False, or None when the server cannot say."""
        attributes = {"verb": verb, "group": group, "resource": resource}
        attributes.update({k: v for k, v in (("subresource", subresource), ("namespace", namespace),
                                             ("name", name)) if v})
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attributes}}
        try:
            review = self._transport.request(
                "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=body,
                content_type="application/json", retry=True, what="checking permissions").json()
        except (ApiError, ConnectionFailed):
            return None
        return bool((review.get("status") or {}).get("allowed"))

    def evict(self, namespace, name, uid, *, grace_period, dry_run, resource_version=None):
        """POSTs a policy/v1 Eviction with a UID precondition, and a resourceVersion one when
        given: then a pod changed since (another evacuate or a drain evicted it: it is
        terminating) answers 409 instead of being evicted twice.  Errors carry the status."""
        if dry_run is DryRun.CLIENT:
            return
        preconditions = {"uid": uid}
        if resource_version:
            preconditions["resourceVersion"] = resource_version
        delete_options: Dict[str, Any] = {"preconditions": preconditions}
        if grace_period is not None and grace_period >= 0:
            delete_options["gracePeriodSeconds"] = grace_period
        params = None
        if dry_run is DryRun.SERVER:
            delete_options["dryRun"] = ["All"]
            params = {"dryRun": "All"}
        body = {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": name, "namespace": namespace},
                "deleteOptions": delete_options}
        self._transport.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction",
                                params=params, body=body, content_type="application/json",
                                retry=False, what=f"evicting pod {namespace}/{name}")

    def pause(self, seconds):
        """Waits, as the calls' own retries do (a test's Kube is given another sleep)."""
        self._sleep(seconds)

    # -- events ----------------------------------------------------------------------------------
    def create_event(self, namespace, involved, reason, message, type_):
        """POSTs a core/v1 Event about the pod ``involved`` ({"name", "uid"}) of ``namespace``.

        The form ``kubectl describe pod`` shows and the kubelet writes: first and last
        timestamps, count 1, no eventTime (with one, the API requires action and
        reportingInstance).  Sent once, never retried: a record must not hold anything up,
        and its caller decides what a failure means."""
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        body = {"apiVersion": "v1", "kind": "Event",
                "metadata": {"generateName": f"{involved['name']}.", "namespace": namespace},
                "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": namespace,
                                   "name": involved["name"], "uid": involved["uid"]},
                "reason": reason, "message": message, "type": type_,
                "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
                "firstTimestamp": now, "lastTimestamp": now, "count": 1}
        self._transport.request("POST", f"/api/v1/namespaces/{namespace}/events", body=body,
                                content_type="application/json", retry=False,
                                what=f"writing an event on pod {namespace}/{involved['name']}")

    def watch_pods_on_node(self, node_name, resource_version, timeout_seconds):
        """Yields (type, pod) events for pods bound to the node until the server ends the watch."""
        return self._watch("/api/v1/pods", {"fieldSelector": f"spec.nodeName={node_name}"},
                           resource_version, timeout_seconds, f"watching pods on node {node_name}")

    def watch_pdbs(self, resource_version, timeout_seconds):
        """Yields (type, PodDisruptionBudget) events, cluster-wide, until the server ends the watch."""
        return self._watch("/apis/policy/v1/poddisruptionbudgets", {}, resource_version,
                           timeout_seconds, "watching PodDisruptionBudgets")

    def _watch(self, path, params, resource_version, timeout_seconds, what):
        params = dict(params, watch="1", resourceVersion=resource_version,
                      timeoutSeconds=int(timeout_seconds), allowWatchBookmarks="true")
        import urllib3
        raw = self._transport.request("GET", path, params=params, stream=True, retry=False,
                                      what=what,
                                      timeout=urllib3.Timeout(connect=30, read=timeout_seconds + 10))
        finished = False
        try:
            buffer = b""
            for chunk in raw.stream(4096, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        event = json.loads(line)
                        yield event.get("type"), event.get("object") or {}
            finished = True
        except urllib3.exceptions.HTTPError:
            return
        finally:
            if not finished:
                raw.close()   # a stream left unread (caller stopped early) must not be reused
            raw.release_conn()


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch, for client-side dry runs."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def connect(options, *, pool_size=10):
    """Loads the kubeconfig (or, in a pod without one, the in-cluster config), applies the
    connection flags and kubectl's checks, and returns a Kube."""
    from . import config as kubeconfig
    from . import rules

    paths = kubeconfig.find_paths(options.kubeconfig)
    if paths or options.server:
        selected = kubeconfig.select(kubeconfig.merge(paths), context=options.context,
                                     cluster=options.cluster, user=options.user,
                                     namespace=options.namespace, server=options.server)
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        selected = kubeconfig.in_cluster(options.namespace)
    else:
        raise ConfigError("no kubeconfig found: set KUBECONFIG, pass --kubeconfig, "
                          "or create ~/.kube/config")
    if selected.in_cluster:
        selected = rules.apply_in_cluster_overrides(selected, options)
    else:
        selected = rules.apply_overrides(selected, options)
    rules.validate(selected)
    return Kube(Transport(selected, options, pool_size=pool_size))
