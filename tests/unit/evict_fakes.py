"""Fakes for the evacuate tests: scripted API errors, a fake clock whose sleep only
moves time, one fake node for the evictor and a small fake cluster for the command."""

import json
import threading
import time

from kubectl_gpuisolate.core.dryrun import DryRun
from kubectl_gpuisolate.errors import NotFound, api_error
from kubectl_gpuisolate.kube.essentials import requests_only

from .factories import node as plain_node

NODE = "gpu-1"
OK = "ok"


def pdb_429(name="web", needs=2, has=1, retry_after=None):
    return api_error("Cannot evict pod as it would violate the pod's disruption budget.", status=429,
                     reason="TooManyRequests", retry_after=retry_after,
                     causes=[{"reason": "DisruptionBudget",
                              "message": f"The disruption budget {name} needs {needs} healthy pods "
                                        f"and has {has} currently"}])


def throttled(retry_after=None):
    return api_error("Too many requests", status=429, reason="TooManyRequests",
                     retry_after=retry_after)


MULTI_PDB = api_error("This pod has more than one PodDisruptionBudget, which the eviction "
                      "subresource does not support. (HTTP 500 while evicting pod default/a)",
                      status=500)
NOT_FOUND = api_error('pods "a" not found', status=404, reason="NotFound")
CONFLICT = api_error("Precondition failed: UID in precondition", status=409, reason="Conflict")
NS_TERMINATING = api_error("unable to create new content in namespace default because it is being "
                           "terminated", status=403, reason="Forbidden",
                           causes=[{"reason": "NamespaceTerminating", "message": "..."}])
RBAC_403 = api_error('pods "a" is forbidden: User "bob" cannot create resource "pods/eviction" in '
                     'API group "" in the namespace "default" (while evicting pod default/a; grant '
                     "that permission or use another context)", status=403, reason="Forbidden")


def server_error(status):
    return api_error(f"HTTP {status}", status=status)


class FakeClock:
    """Time moves only when someone sleeps; every sleep is recorded with its thread.

    With ``lanes_only`` only the eviction lanes' backoff moves time; the watch
    loop's polls just yield, so they cannot run the clock out before a lane starts."""

    def __init__(self, lanes_only=False):
        self.t = 0.0
        self.sleeps = []
        self.lock = threading.Lock()
        self.lanes_only = lanes_only

    def now(self):
        with self.lock:
            return self.t

    def sleep(self, seconds, stop):
        lane = threading.current_thread().name.startswith("evict")
        with self.lock:
            self.sleeps.append((threading.current_thread().name, seconds))
            if lane or not self.lanes_only:
                self.t += max(seconds, 0)
        if not lane:
            # Yield for real: otherwise a watch loop's polls can run the clock to the deadline
            # in the microseconds before the eviction lanes' threads have even started.
            time.sleep(0 if self.lanes_only else 0.0005)

    def lane_sleeps(self):
        return [s for name, s in self.sleeps if name.startswith("evict")]


def make_pod(name, namespace="default", uid=None):
    return {"metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"}}


class FakeNode:
    """One node's pods with scripted eviction responses.

    ``script[name]`` is a list consumed one response per call (the last one
    repeats): OK, an exception, or a callable returning either.  An accepted
    eviction removes the pod after ``linger`` more lists and queues a DELETED
    watch event at that moment.
    """

    def __init__(self, names=(), *, script=None, linger=0, list_lags=False, watch_error=None,
                 on_evict=None, event_error=None):
        self.lock = threading.RLock()
        self.written = []                   # (namespace, name, uid, reason, type, message)
        self.event_error = event_error      # raised by create_event
        self.pods = {n: make_pod(n) for n in names}
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.linger = linger
        self.list_lags = list_lags          # the list never shows deletions; only the watch does
        self.initial_names = list(names)
        self.watch_error = watch_error
        self.on_evict = on_evict
        self.calls = []
        self.terminating = {}               # name -> lists left before it is gone
        self.events = []
        self.replacements = {}              # name -> pod returned by get_pod
        self.lists = 0
        self.versions = []                  # the resourceVersion precondition of each eviction

    def evict(self, namespace, name, uid, *, grace_period, dry_run, resource_version=None):
        with self.lock:
            self.calls.append((namespace, name, uid, grace_period, dry_run))
            self.versions.append(resource_version)
            queue = self.script.get(name) or [OK]
            response = queue.pop(0) if len(queue) > 1 else queue[0]
        if callable(response) and not isinstance(response, BaseException):
            response = response()
        if self.on_evict:
            self.on_evict(name)
        if isinstance(response, BaseException):
            raise response
        if dry_run is DryRun.NONE:
            with self.lock:
                self.terminating.setdefault(name, self.linger)
                self._expire()

    def _expire(self):
        for name, left in list(self.terminating.items()):
            if left <= 0:
                del self.terminating[name]
                pod = self.pods.pop(name, None)
                if pod:
                    self.events.append(("DELETED", pod))
            else:
                self.terminating[name] = left - 1

    def get_pod(self, namespace, name):
        with self.lock:
            if name in self.replacements:
                return self.replacements[name]
            if name not in self.pods:
                raise api_error(f'pods "{name}" not found', status=404)
            return self.pods[name]

    def list_pods_on_node_with_version(self, node_name, not_older_than=None):
        with self.lock:
            self.lists += 1
            if self.lists > 1:
                self._expire()
            pods = list(self.pods.values()) if not self.list_lags else \
                [make_pod(n) for n in self.initial_names]
            return pods, str(self.lists)

    def watch_pods_on_node(self, node_name, resource_version, timeout_seconds):
        error = self.watch_error
        if isinstance(error, list):     # one per watch, then none
            error = error.pop(0) if error else None
        if error:
            raise error
        with self.lock:
            events, self.events = self.events, []
        for event in events:
            yield event

    def create_event(self, namespace, involved, reason, message, type_):
        record_event(self, namespace, involved, reason, message, type_)


def record_event(fake, namespace, involved, reason, message, type_):
    """create_event of both fakes: raises ``fake.event_error`` if set, else records the event."""
    with fake.lock:
        if fake.event_error is not None:
            fake.written.append(("failed", namespace, involved["name"], reason))
            raise fake.event_error
        fake.written.append((namespace, involved["name"], involved["uid"], reason, type_, message))


class GatedNode(FakeNode):
    """Lists only after ``gate`` evictions were sent, so the watch loop (whose polls
    advance the fake clock) cannot run the clock out before the lanes start."""

    def __init__(self, *args, gate=1, **kw):
        super().__init__(*args, **kw)
        self.gate = gate
        self.opened = threading.Event()

    def evict(self, *args, **kw):
        try:
            return super().evict(*args, **kw)
        finally:
            if len(self.calls) >= self.gate:
                self.opened.set()

    def list_pods_on_node_with_version(self, node_name, not_older_than=None):
        self.opened.wait(5)
        return super().list_pods_on_node_with_version(node_name, not_older_than)


class InFlight:
    """Counts evictions in flight per key; each call is held until ``size`` are in flight
    at once (at most ``hold`` seconds), so overlaps that can happen do happen."""

    def __init__(self, size, key=lambda name: "all", hold=2.0):
        self.size, self.key, self.hold = size, key, hold
        self.lock = threading.Lock()
        self.now, self.peak = {}, {}
        self.full = threading.Event()

    def response(self, name):
        def respond():
            k = self.key(name)
            with self.lock:
                self.now[k] = self.now.get(k, 0) + 1
                self.peak[k] = max(self.peak.get(k, 0), self.now[k])
                total = sum(self.now.values())
                self.peak["total"] = max(self.peak.get("total", 0), total)
                if total >= self.size:
                    self.full.set()
            self.full.wait(self.hold)
            with self.lock:
                self.now[k] -= 1
            return OK
        return respond


WORKER = "cpu-worker-1"


class FakeCluster:
    """Nodes, pods and PDBs; evictions delete at once unless scripted otherwise.  Taint writes
    that are not dry runs change the node and are logged as ("taint", node name).

    ``workers`` names plain nodes added beside ``nodes``, where moved pods can land;
    ``pvcs``/``pvs`` and ``controllers`` ({(namespace, kind, name): object}) are what the
    landing check reads."""

    def __init__(self, nodes, pods, pdbs=(), script=None, on_evict=None, event_error=None, *,
                 workers=(WORKER,), pvcs=None, pvs=None, controllers=None, resource_claims=None,
                 claims_error=None, runtime_classes=None, runtime_classes_error=None):
        self.nodes = {n["metadata"]["name"]: n for n in nodes}
        self.resource_claims = dict(resource_claims or {})   # {(namespace, name): ResourceClaim}
        self.claims_error = claims_error                     # raised by get_resource_claim
        self.runtime_classes = dict(runtime_classes or {})  # {name: handler}
        self.runtime_classes_error = runtime_classes_error  # raised by list_runtime_classes
        for name in workers:
            self.nodes.setdefault(name, plain_node(name))
        self.pvcs, self.pvs = dict(pvcs or {}), dict(pvs or {})
        self.controllers = dict(controllers or {})
        self.written = []                   # events: (namespace, name, uid, reason, type, message)
        self.event_error = event_error      # raised by create_event
        self.pods = list(pods)
        self.pdbs = list(pdbs)
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.on_evict = on_evict
        self.log = []
        self.reads = []                     # the pod lists of the fit check and replacement watch, in order
        self.pauses = []                    # the seconds of each pause(); on_pause(self) after each
        self.on_pause = None
        self.events = {}
        self.lock = threading.RLock()
        self.admission = {}                 # the guard's objects: {(kind, name): object}
        self.admission_error = None         # raised by each of the guard's calls
        self.namespaces = None              # list_namespace_names: these, or an ApiError to raise
        self.permissions = {}               # can_i: {(verb, resource): bool}; others True
        self.version = "v1.33.5"

    def list_nodes(self, selector=None, *, limit=None, retry=True):
        return [json.loads(json.dumps(n)) for n in self.nodes.values()]

    def list_nodes_with_version(self, selector=None):
        return self.list_nodes(selector), "1"

    def get_node(self, name):
        if name not in self.nodes:
            raise NotFound(f'node "{name}" not found; check the name with \'kubectl get nodes\'')
        return json.loads(json.dumps(self.nodes[name]))

    def update_node_taints(self, name, compute, *, dry_run, attempts=8):
        node = self.get_node(name)
        new, verb = compute(node["spec"].get("taints") or [])
        if new is None:
            return node, verb
        node["spec"]["taints"] = new
        if dry_run is DryRun.NONE:
            self.log.append(("taint", name))
            self.nodes[name] = node
        return node, verb

    def pause(self, seconds):
        self.pauses.append(seconds)
        if self.on_pause:
            self.on_pause(self)

    def _on(self, name):
        return [p for p in self.pods if p["spec"].get("nodeName") == name]

    def list_pods_on_node(self, node_name, not_older_than=None):
        with self.lock:
            return [json.loads(json.dumps(p)) for p in self._on(node_name)]

    def list_pods_on_node_with_version(self, node_name, not_older_than=None):
        return self.list_pods_on_node(node_name), "1"

    def watch_pods_on_node(self, node_name, resource_version, timeout_seconds):
        with self.lock:
            events, self.events[node_name] = self.events.get(node_name, []), []
        yield from events

    def list_pod_requests(self, node_name=None):
        with self.lock:
            self.reads.append("pod requests" + (f" on {node_name}" if node_name is not None else ""))
            return [requests_only(p) for p in self.pods
                    if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                    and node_name in (None, p["spec"].get("nodeName"))]

    def list_pdbs_with_version(self):
        return self.list_pdbs(), "1"

    def watch_pdbs(self, resource_version, timeout_seconds):
        return iter(())

    def list_unscheduled_pods(self):
        with self.lock:
            self.reads.append("unscheduled pods")
            return [json.loads(json.dumps(p)) for p in self.pods
                    if not p["spec"].get("nodeName")
                    and (p.get("status") or {}).get("phase") == "Pending"]

    def can_i(self, verb, resource, *, group="", subresource="", namespace="", name=""):
        if (verb, resource) in self.permissions:
            return self.permissions[(verb, resource)]
        return True

    def get_controller(self, namespace, kind, name):
        return self.controllers.get((namespace, kind, name))

    def list_template_pins(self, kind, at_most=None):
        pins = {(ns, name): (((c.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeName")
                for (ns, k, name), c in self.controllers.items() if k == kind}
        if at_most and len(pins) > at_most:
            return None
        return {key: node for key, node in pins.items() if node}

    def get_pvc(self, namespace, name):
        return self.pvcs.get((namespace, name))

    def get_pv(self, name):
        return self.pvs.get(name)

    def get_resource_claim(self, namespace, name):
        if self.claims_error:
            raise self.claims_error
        return self.resource_claims.get((namespace, name))

    def server_version(self):
        return self.version

    # -- the guard's calls ---------------------------------------------------------------------------
    def _admission_check(self):
        if self.admission_error:
            raise self.admission_error

    def get_admission_object(self, kind, name):
        self._admission_check()
        found = self.admission.get((kind, name))
        return json.loads(json.dumps(found)) if found else None

    def apply_admission_object(self, obj, *, dry_run):
        self._admission_check()
        self.log.append(("apply", obj["kind"], dry_run.value))
        if dry_run is DryRun.NONE:
            self.admission[(obj["kind"], obj["metadata"]["name"])] = json.loads(json.dumps(obj))
        return obj

    def list_admission_objects(self, kind, label_selector):
        self._admission_check()
        wanted = dict(pair.split("=") for pair in label_selector.split(","))
        return [o for (k, _), o in self.admission.items()
                if k == kind and wanted.items() <= (o["metadata"].get("labels") or {}).items()]

    def delete_admission_object(self, kind, name, uid, *, dry_run):
        self._admission_check()
        self.log.append(("delete", kind, dry_run.value))
        if dry_run is DryRun.NONE:
            self.admission.pop((kind, name), None)

    def list_namespace_names(self):
        if isinstance(self.namespaces, Exception):
            raise self.namespaces
        return list(self.namespaces or ())

    def list_pdbs(self):
        return list(self.pdbs)

    def list_runtime_classes(self):
        if self.runtime_classes_error:
            raise self.runtime_classes_error
        with self.lock:
            self.reads.append("runtime classes")
        return dict(self.runtime_classes)

    def daemonset_exists(self, namespace, name):
        return True

    def list_daemonset_keys(self, at_most):
        """Every DaemonSet its pods name (each exists, as daemonset_exists says)."""
        found = frozenset((p["metadata"].get("namespace", ""), ref["name"]) for p in self.pods
                          for ref in p["metadata"].get("ownerReferences") or ()
                          if ref.get("kind") == "DaemonSet")
        return None if len(found) > at_most else found

    def get_pod(self, namespace, name):
        for p in self.pods:
            if (p["metadata"]["namespace"], p["metadata"]["name"]) == (namespace, name):
                return p
        raise api_error("not found", status=404)

    def evict(self, namespace, name, uid, *, grace_period, dry_run, resource_version=None):
        with self.lock:
            self.log.append(("evict", f"{namespace}/{name}", dry_run))
            queue = self.script.get(name) or ["ok"]
            response = queue.pop(0) if len(queue) > 1 else queue[0]
        if self.on_evict:
            self.on_evict(self, name)
        if isinstance(response, BaseException):
            raise response
        if dry_run is DryRun.NONE:
            with self.lock:
                for p in list(self.pods):
                    if p["metadata"]["uid"] == uid:
                        self.pods.remove(p)
                        node = p["spec"]["nodeName"]
                        self.events.setdefault(node, []).append(("DELETED", p))

    def create_event(self, namespace, involved, reason, message, type_):
        record_event(self, namespace, involved, reason, message, type_)

    def evicted(self):
        return [entry[1] for entry in self.log if entry[0] == "evict"]
