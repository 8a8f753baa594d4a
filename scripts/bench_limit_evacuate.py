"""The evacuate workload of scripts/bench's limit phase: budgets that span nodes.

``gpu_nodes`` GPU nodes (20 in a full run) with ``pods`` movable pods each (50), where the pods
of one node all belong to different ReplicaSets and each ReplicaSet has one pod on every GPU
node, under a PodDisruptionBudget that allows one disruption (maxUnavailable 1): a budget
spans the pool, as a Deployment spread over a pool's nodes does.  So at most one pod of each
ReplicaSet can be gone at a time, on either side, and how soon a side notices that its budget
allows the next eviction is what it is measured on.

Built on scripts/bench_evacuate.Workload (its nodes, GPU pods, cleanup and measure), with
nodes and labels of its own so that the two workloads never meet.  reset() places the pods a
node at a time: every other bench node cordoned, each ReplicaSet scaled up by one.
"""
import json

import bench_evacuate as evac

LAND_NODES = 4


def _pdb(name):
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": evac.NS, "labels": {evac.LABEL: "app"}},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": name}}}}


class SpreadWorkload(evac.Workload):
    def __init__(self, kubectl, env, log, gpu_nodes):
        super().__init__(kubectl, env, log,
                         gpu_nodes=[f"bench-limit-gpu-{i:02d}" for i in range(gpu_nodes)],
                         land_nodes=[f"bench-limit-land-{i}" for i in range(LAND_NODES)])

    def reset(self, pods):
        """Untainted, uncordoned GPU nodes, each with its GPU pod and one Running pod of each of
        ``pods`` ReplicaSets, every budget allowing one disruption.  Returns the GPU pods' UIDs."""
        for name in self.gpu_nodes:
            self.k("patch", "node", name, "--type=merge", "-p",
                   '{"spec":{"taints":null,"unschedulable":null}}')
        self.k("delete", "rs,pdb", "-n", evac.NS, "-l", f"{evac.LABEL}=app", "--wait=false")
        self.k("delete", "pods", "-n", evac.NS, "-l", f"{evac.LABEL}=app", "--grace-period=0",
               "--force", "--wait=false")
        self.wait("the old bench pods to go",
                  lambda: (not self.items("pods", "-n", evac.NS, "-l", f"{evac.LABEL}=app"), "pods left"))
        self.wait("the GPU pods", self._gpu_pods_ready)
        names = [f"app-{j:02d}" for j in range(pods)]
        sets = [evac._replicaset(name, None, 0, False) for name in names]
        self.k("create", "-f", "-", stdin=evac._items(*sets, *map(_pdb, names)))
        everything = self.gpu_nodes + self.land_nodes
        for i, node in enumerate(self.gpu_nodes):    # one pod of each set, while only it is schedulable
            self.k("cordon", *[n for n in everything if n != node])
            self.k("uncordon", node)
            self.k("scale", "-n", evac.NS, f"--replicas={i + 1}", *[f"rs/{n}" for n in names])
            self.wait(f"{pods} pods on {node}", lambda node=node: self._placed(node, pods))
        self.k("uncordon", *everything)
        self.wait("every budget to allow one disruption", lambda: self._budgets(pods))
        return {p["metadata"]["uid"] for p in self.pods("gpu")}

    def _budgets(self, pods):
        found = json.loads(self.k("get", "pdb", "-n", evac.NS, "-o", "json"))["items"]
        allowing = [p for p in found if (p.get("status") or {}).get("disruptionsAllowed") == 1]
        return len(allowing) == pods, f"{len(allowing)} of {pods} budgets allow one"
