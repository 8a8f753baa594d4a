"""The evacuate workload of scripts/bench's limit phase: budgets that span nodes.

``gpu_nodes`` GPU nodes (20 in a full run) with ``pods`` movable pods each (50), where the pods
of one node all belong to different ReplicaSets and each ReplicaSet has one pod on every GPU
node, under a PodDisruptionBudget that allows one disruption (maxUnavailable 1): a budget
spans the pool, as a Deployment spread over a pool's nodes does.  So at most one pod of each
ReplicaSet can be gone at a time, on either side, and how soon a side notices that its budget
allows the next eviction is what it is measured on.

Built on scripts/bench_evacuate.Workload (its nodes, GPU pods, cleanup and measure), with
nodes and labels of its own so that the two workloads never meet.  reset() creates the pods
bound to their nodes, then the ReplicaSets that adopt them.
"""
import collections
import copy
import json

import bench_evacuate as evac

LAND_NODES = 4
CREATE_CHUNK = 250      # pods a kubectl create sends


def _pdb(name):
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": evac.NS, "labels": {evac.LABEL: "app"}},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": name}}}}


def _bound_pod(replicaset, node, index):
    """An orphan pod that ``replicaset``'s selector matches, already bound to ``node``."""
    template = copy.deepcopy(replicaset["spec"]["template"])
    meta = replicaset["metadata"]
    template["metadata"].update(name=f"{meta['name']}-{index:02d}", namespace=meta["namespace"])
    template["spec"]["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", **template}


class SpreadWorkload(evac.Workload):
    def __init__(self, kubectl, env, log, gpu_nodes):
        super().__init__(kubectl, env, log,
                         gpu_nodes=[f"bench-limit-gpu-{i:02d}" for i in range(gpu_nodes)],
                         land_nodes=[f"bench-limit-land-{i}" for i in range(LAND_NODES)])

    def reset(self, pods):
        """Untainted, uncordoned GPU nodes, each with its GPU pod and one Running pod of each of
        ``pods`` ReplicaSets, every budget allowing one disruption.  Returns the GPU pods' UIDs.

        The pods are created bound (spec.nodeName) and without owners, then their ReplicaSets,
        which adopt them: at 5,000 nodes, placing 1,000 pods through the scheduler a node at a
        time took ~8 min a reset.  Their replacements are the scheduler's, as before."""
        self.clear("rs,pdb")
        names = [f"app-{j:02d}" for j in range(pods)]
        sets = [evac._replicaset(name, None, len(self.gpu_nodes), False) for name in names]
        bound = [_bound_pod(rs, node, i) for i, node in enumerate(self.gpu_nodes) for rs in sets]
        for chunk in range(0, len(bound), CREATE_CHUNK):
            self.k("create", "-f", "-", stdin=evac._items(*bound[chunk:chunk + CREATE_CHUNK]))
        self.wait(f"{pods} pods on each of {len(self.gpu_nodes)} nodes", lambda: self._placed_all(pods))
        # Created once every pod runs, so each ReplicaSet adopts its pods rather than adding any.
        self.k("create", "-f", "-", stdin=evac._items(*sets, *map(_pdb, names)))
        self.wait("every pod adopted by its ReplicaSet", lambda: self._adopted(pods))
        self.wait("every budget to allow one disruption", lambda: self._budgets(pods))
        return {p["metadata"]["uid"] for p in self.pods("gpu")}

    def _adopted(self, pods):
        found = self.pods("app")
        owned = [p for p in found
                 if any(ref.get("controller") for ref in p["metadata"].get("ownerReferences") or ())]
        ok = len(owned) == len(found) == pods * len(self.gpu_nodes)
        return ok, f"{len(owned)} of {len(found)} pods adopted"

    def _placed_all(self, pods):
        found = self.pods("app")
        running = collections.Counter(p["spec"].get("nodeName") for p in found
                                      if p["status"].get("phase") == "Running")
        short = {n: running[n] for n in self.gpu_nodes if running[n] != pods}
        ok = not short and len(found) == pods * len(self.gpu_nodes)
        return ok, f"{len(found)} pods; Running on the nodes not yet at {pods}: {short}"

    def _budgets(self, pods):
        found = json.loads(self.k("get", "pdb", "-n", evac.NS, "-o", "json"))["items"]
        allowing = [p for p in found if (p.get("status") or {}).get("disruptionsAllowed") == 1]
        return len(allowing) == pods, f"{len(allowing)} of {pods} budgets allow one"
