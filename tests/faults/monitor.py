"""Watches every pod and PodDisruptionBudget and, while armed, checks after each
event that no budget is below its minimum: the healthy (Ready, not terminating)
pods its selector matches, counted here from the pod watch, and the budget's own
status.currentHealthy, against the desiredHealthy it had when armed."""

import threading

from .cluster import Watch, ready, wait_for


def _matches(selector, labels):
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


class PdbMonitor:
    def __init__(self, admin):
        self._lock = threading.Lock()
        self._pods = {}            # uid -> (namespace, labels, healthy)
        self._pdbs = {}            # (namespace, name) -> PDB
        self._synced = set()
        self._armed = None         # (namespace, name) -> desiredHealthy when armed
        self.violations = []
        self.checks = 0
        self._watches = [
            Watch(admin, "/api/v1/pods", self._on_pod, lambda items: self._relist("pods", items)),
            Watch(admin, "/apis/policy/v1/poddisruptionbudgets", self._on_pdb,
                  lambda items: self._relist("pdbs", items))]

    def start(self):
        for watch in self._watches:
            watch.start()
        wait_for("the PDB monitor's first lists", lambda: len(self._synced) == 2, timeout=60)
        return self

    def stop(self):
        for watch in self._watches:
            watch.stop()

    # -- caches ---------------------------------------------------------------------------------
    def _relist(self, what, items):
        with self._lock:
            if what == "pods":
                self._pods = {p["metadata"]["uid"]: self._pod_entry(p) for p in items}
            else:
                self._pdbs = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in items}
            self._synced.add(what)
            self._check("relist")

    @staticmethod
    def _pod_entry(pod):
        return pod["metadata"]["namespace"], pod["metadata"].get("labels") or {}, ready(pod)

    def _on_pod(self, kind, pod):
        with self._lock:
            if kind == "DELETED":
                self._pods.pop(pod["metadata"]["uid"], None)
            else:
                self._pods[pod["metadata"]["uid"]] = self._pod_entry(pod)
            self._check(f"pod {pod['metadata']['namespace']}/{pod['metadata']['name']} {kind}")

    def _on_pdb(self, kind, pdb):
        key = (pdb["metadata"]["namespace"], pdb["metadata"]["name"])
        with self._lock:
            if kind == "DELETED":
                self._pdbs.pop(key, None)
            else:
                self._pdbs[key] = pdb
            self._check(f"PDB {key[0]}/{key[1]} {kind}")

    def healthy(self, key):
        pdb = self._pdbs[key]
        selector = pdb["spec"].get("selector")
        return sum(1 for ns, labels, ok in self._pods.values()
                   if ok and ns == key[0] and _matches(selector, labels))

    def _check(self, cause):
        if self._armed is None:
            return
        for key, desired in self._armed.items():
            if key not in self._pdbs:
                continue
            self.checks += 1
            counted = self.healthy(key)
            status = self._pdbs[key].get("status") or {}
            reported = status.get("currentHealthy")
            if counted < desired:
                self.violations.append(f"PDB {key[0]}/{key[1]}: {counted} healthy pods < "
                                       f"{desired} desired (after {cause})")
            if reported is not None and reported < desired:
                self.violations.append(f"PDB {key[0]}/{key[1]}: status.currentHealthy {reported} "
                                       f"< {desired} desired (after {cause})")

    # -- windows --------------------------------------------------------------------------------
    def settled(self):
        """True when every PDB is observed, at its minimum or above, by both measures."""
        with self._lock:
            for key, pdb in self._pdbs.items():
                status = pdb.get("status") or {}
                if status.get("observedGeneration") != pdb["metadata"].get("generation"):
                    return False
                desired = status.get("desiredHealthy", 0)
                if self.healthy(key) < desired or status.get("currentHealthy", 0) < desired:
                    return False
            return True

    def arm(self):
        """Starts a window: from now on a PDB below its current desiredHealthy is a violation."""
        wait_for("every PodDisruptionBudget at or above its minimum", self.settled, timeout=120)
        with self._lock:
            self._armed = {key: (pdb.get("status") or {}).get("desiredHealthy", 0)
                           for key, pdb in self._pdbs.items()}
            self.violations = []
            self._check("arm")
            return dict(self._armed)

    def disarm(self):
        """Ends the window; returns (violations, checks made in it)."""
        with self._lock:
            self._armed = None
            found, checks = list(self.violations), self.checks
            self.violations, self.checks = [], 0
            return found, checks
