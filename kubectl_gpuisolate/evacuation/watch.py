"""Seeing evicted pods go: a list of the node (an absent UID is gone), then a watch from the
list's resourceVersion; when watching does not work here, polling the list instead.

The Kube-like object needs ``list_pods_on_node_with_version`` and ``watch_pods_on_node``.
"""

from ..errors import ApiError, ConnectionFailed, Gone

# A watch cut off with the connection (the API server restarting, a load balancer's idle
# timeout) is watched again after a fresh list; only this many cuts in a row mean polling.
WATCH_CUTS = 3


class GoneWatcher:
    """Marks one node's pods gone until the node is finished, settled or halted."""

    def __init__(self, kube, node, halt, *, say, poll=1.0, window=5.0):
        self._kube = kube
        self._node = node            # a state.NodeEvacuation
        self._halt = halt
        self._say = say
        self._poll = poll
        self._window = window
        self._cuts = 0               # watches in a row that ended with a network error

    def over(self):
        return self._node.finished or self._halt.halted() or self._node.settled()

    def run(self):
        """Lists, then watches for one window, and again; after a watch error other than
        410 it only lists, every ``poll`` seconds."""
        watching = True
        while not self.over():
            try:
                pods, version = self._kube.list_pods_on_node_with_version(self._node.node)
            except (ApiError, ConnectionFailed):
                self._halt.nap(self._poll)
                continue
            present = {(p.get("metadata") or {}).get("uid") for p in pods}
            for uid in list(self._node.outcomes):
                if uid not in present:
                    self._node.mark_gone(uid, seen_by_watch=True)
            if self.over():
                break
            started = self._halt.clock.now()
            if watching:
                watching = self._watch(version)
            if self._halt.clock.now() - started < self._poll:
                self._halt.nap(self._poll)
        self._node.wake()

    def _watch(self, version):
        """One watch window; False when watching does not work here (then poll): an HTTP error,
        or WATCH_CUTS network errors in a row.

        Windows are short: a watch blocked in a read cannot be cancelled, so a
        finished node's watch holds its connection until its window ends."""
        window, left = self._window, self._halt.left()
        if left is not None:
            window = max(1.0, min(window, left))
        name = self._node.node
        try:
            for kind, obj in self._kube.watch_pods_on_node(name, version, window):
                if kind == "DELETED":
                    self._node.mark_gone((obj.get("metadata") or {}).get("uid"), seen_by_watch=True)
                elif kind == "ERROR":   # e.g. 410 Expired: list again
                    return True
                if self.over():
                    return True
        except Gone:                # the version is too old (410): list again
            return True
        except ApiError as exc:
            self._say(f"node/{name}: cannot watch pods (HTTP {exc.status}); "
                      f"polling every {self._poll:g}s instead")
            return False
        except ConnectionFailed:
            self._cuts += 1
            if self._cuts < WATCH_CUTS:
                return True         # list again (a fresh resourceVersion), then watch again
            self._say(f"node/{name}: the pod watch failed {self._cuts} times in a row; polling "
                      f"every {self._poll:g}s instead")
            return False
        self._cuts = 0
        return True
