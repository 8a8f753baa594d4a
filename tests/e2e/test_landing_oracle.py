"""The landing check against the real kube-scheduler (issue #13).

The seed sandbox's nodes get extra labels (zones, an integer rank with one non-integer value, a
disk type), extra taints (NoSchedule with and without a value, NoExecute on a control-plane node,
PreferNoSchedule, which must not filter) and one cordon; PersistentVolumes (local and hostPath,
with nodeAffinity by hostname, zone, rank, several terms, and matchFields) are bound to claims by
the controller-manager's PV controller, and one claim does not exist.  Pod specs are generated at
random (seeded; the seed is in every failure message, and LANDING_ORACLE_SEED replays one) from
the labels, values and taints the nodes actually carry.  For each spec and each node, a copy of
the pod whose required node affinity is the spec's, each term ANDed with ``metadata.name In
[node]``, is created (all at once, with requests too small for resources to decide); the
scheduler binds it or marks it Unschedulable.  The nodes whose copy was bound must be exactly
``landing.feasible_nodes`` of the spec.
"""

import json
import os
import random
import time

import pytest
from sandbox_helpers import CONTROL_PLANE, CPU_WORKERS, GPU_A, GPU_B, wait_until

from kubectl_gpuisolate.core import landing

pytestmark = pytest.mark.e2e

SPECS = 60
ZONE, RANK, DISK = "topology.kubernetes.io/zone", "example.com/rank", "example.com/disk"
ABSENT = "example.com/absent"
CORDONED, NOEXEC = CPU_WORKERS[3], CONTROL_PLANE[2]
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
# node: (zone, rank, disk); None leaves the label off
EXTRA_LABELS = {
    GPU_A: ("zone-a", "9", "ssd"), GPU_B: ("zone-b", "7", "nvme"),
    CPU_WORKERS[0]: ("zone-a", "1", "ssd"), CPU_WORKERS[1]: ("zone-b", "3", "hdd"),
    CPU_WORKERS[2]: ("zone-c", "5", None), CPU_WORKERS[3]: ("zone-c", "x", "ssd"),
    CONTROL_PLANE[0]: ("zone-a", "0", "hdd"), CONTROL_PLANE[1]: ("zone-b", "10", None),
    CONTROL_PLANE[2]: (None, None, "ssd"),
}
EXTRA_TAINTS = {
    GPU_B: [{"key": "example.com/dedicated", "value": "inference", "effect": "NoSchedule"}],
    CPU_WORKERS[1]: [{"key": "example.com/flaky", "effect": "NoSchedule"}],
    CPU_WORKERS[2]: [{"key": "example.com/slow", "value": "yes", "effect": "PreferNoSchedule"}],
    # The taint-eviction controller deletes the seed pods here that do not tolerate it (the
    # metallb speaker); `clean` resets the node and reloads the seed's workloads afterwards.
    NOEXEC: [{"key": "example.com/maintenance", "value": "soon", "effect": "NoExecute"}],
}


def term_of(*expressions, fields=()):
    found = {"matchExpressions": [dict(zip(("key", "operator", "values"), e)) for e in expressions]}
    if fields:
        found["matchFields"] = [{"key": "metadata.name", "operator": op, "values": [v]}
                                for op, v in fields]
    return found


def volume_affinities():
    """PV name -> (volume source, required node selector terms or None)."""
    local = {"local": {"path": "/mnt/disks/oracle"}}
    host = {"hostPath": {"path": "/tmp/oracle"}}
    hostname = "kubernetes.io/hostname"
    return {
        "local-gpu-a": (local, [term_of((hostname, "In", [GPU_A]))]),
        "local-cordoned": (local, [term_of((hostname, "In", [CORDONED]))]),
        "local-noexec": (local, [term_of((hostname, "In", [NOEXEC]))]),
        "zone-a": (host, [term_of((ZONE, "In", ["zone-a"]))]),
        "zone-b-fast-or-c": (host, [term_of((ZONE, "In", ["zone-b"]), (DISK, "In", ["ssd", "nvme"])),
                                    term_of((ZONE, "In", ["zone-c"]))]),
        "rank-over-4": (host, [term_of((RANK, "Gt", ["4"]))]),
        "not-hdd": (host, [term_of((DISK, "NotIn", ["hdd"]))]),
        # The scheduler matches a PV's nodeAffinity against the node's labels only.
        "fields-in": (host, [term_of((DISK, "Exists"), fields=[("In", CPU_WORKERS[0])])]),
        "fields-notin": (host, [term_of(fields=[("NotIn", CPU_WORKERS[1])])]),
        "anywhere": (host, None),
    }


def persistent_volume(name, namespace, source, terms):
    spec = dict(source, capacity={"storage": "1Gi"}, accessModes=["ReadWriteMany"],
                persistentVolumeReclaimPolicy="Retain", storageClassName="",
                claimRef={"namespace": namespace, "name": f"claim-{name}"})
    if terms is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": terms}}
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "labels": {"landing-oracle": namespace}}, "spec": spec}


def claim(name, namespace):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": f"claim-{name}", "namespace": namespace},
            "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": name,
                     "resources": {"requests": {"storage": "1Gi"}}}}


def apply_list(sandbox, items, verb="create"):
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
    sandbox.kubectl(verb, "-f", "-", input=body, timeout=600)


def stage_nodes(sandbox):
    """Extra labels, taints and a cordon on the seed's nodes; returns the nodes once the
    controller-manager has put the cordon's taint on."""
    for name, (zone, rank, disk) in EXTRA_LABELS.items():
        node = sandbox.get_json("node", name)
        taints = (node["spec"].get("taints") or []) + EXTRA_TAINTS.get(name, [])
        patch = {"metadata": {"labels": {ZONE: zone, RANK: rank, DISK: disk}},
                 "spec": {"taints": taints, "unschedulable": True if name == CORDONED else None}}
        sandbox.kubectl("patch", "node", name, "--type=merge", "-p", json.dumps(patch))

    def staged():
        nodes = sandbox.get_json("nodes")["items"]
        by_name = {n["metadata"]["name"]: n for n in nodes}
        keys = {t["key"] for t in by_name[CORDONED]["spec"].get("taints") or ()}
        return nodes if UNSCHEDULABLE_TAINT in keys else None
    return wait_until("the cordon's taint", staged, timeout=120)


@pytest.fixture
def stage(clean):
    """The staged nodes; the PVs the test creates are deleted afterwards (after the namespace
    and its claims are gone), then `clean` resets labels, taints and cordons."""
    created = {"pvs": []}
    created["nodes"] = stage_nodes(clean)
    yield created
    if created["pvs"]:
        clean.kubectl("delete", "pv", *created["pvs"], "--ignore-not-found", "--timeout=120s",
                      timeout=180)


class Generator:
    """Pod specs over the labels, values and taints the nodes carry."""

    OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")

    def __init__(self, rng, nodes, claims):
        self.rng, self.claims, self.anchor = rng, sorted(claims), nodes[0]
        self.names = [n["metadata"]["name"] for n in nodes]
        self.nodes = nodes
        self.values = {}
        for node in nodes:
            for key, value in (node["metadata"].get("labels") or {}).items():
                self.values.setdefault(key, set()).add(value)
        self.keys = sorted(self.values) + [ABSENT]
        self.integer_keys = [k for k, vs in self.values.items() if any(v.isdigit() for v in vs)]
        self.taints = [t for n in nodes for t in n["spec"].get("taints") or ()]

    def bound(self, op, key, have, friendly):
        """A Gt or Lt bound: one that ``have`` passes when friendly, else near some node's value."""
        ints = [int(v) for v in self.values.get(key, ()) if v.isdigit()] or [5]
        if self.rng.random() < 0.08:
            return "v1"     # not an integer: the API takes it, the term then matches no node
        if friendly and have.isdigit():
            return str(max(0, int(have) + (-1 if op == "Gt" else 1)))
        return str(max(0, self.rng.choice(ints) + self.rng.choice((-1, 0, 0, 1))))

    def expression(self, op, anchor):
        """A requirement; most hold on ``anchor`` (a node's labels), so that terms match some node."""
        rng = self.rng
        friendly = rng.random() < 0.8
        if op in ("Gt", "Lt"):
            mine = [k for k in self.integer_keys if anchor.get(k, "").isdigit()]
            key = rng.choice(mine if friendly and mine else self.integer_keys + [ZONE, ABSENT])
            return {"key": key, "operator": op,
                    "values": [self.bound(op, key, anchor.get(key, ""), friendly)]}
        absent = [k for k in self.keys if k not in anchor]
        if friendly and op != "DoesNotExist":
            key = rng.choice(sorted(anchor))
        else:
            key = rng.choice(absent if friendly else self.keys)
        if op in ("Exists", "DoesNotExist"):
            return {"key": key, "operator": op}
        seen = sorted(self.values.get(key, ())) or ["none"]
        values = rng.sample(seen, rng.randint(1, min(3, len(seen))))
        if friendly and op == "In" and anchor[key] not in values:
            values.append(anchor[key])
        if friendly and op == "NotIn":
            values = [v for v in values if v != anchor[key]] or ["no-such-value"]
        if rng.random() < 0.15:
            values.append("no-such-value")
        return {"key": key, "operator": op, "values": values}

    def term(self, op, anchor):
        rng = self.rng
        if rng.random() < 0.04:
            return {}
        labels = anchor["metadata"].get("labels") or {}
        found = {}
        if op or rng.random() < 0.85:
            ops = [op or rng.choice(self.OPS)] + [rng.choice(self.OPS) for _ in range(rng.randint(0, 2))]
            found["matchExpressions"] = [self.expression(o, labels) for o in ops]
        if rng.random() < 0.3 or not found:
            field_op, name = rng.choice(("In", "NotIn")), rng.choice(self.names)
            if rng.random() < 0.5:      # one that holds on the anchor
                name = anchor["metadata"]["name"] if field_op == "In" else \
                    rng.choice([n for n in self.names if n != anchor["metadata"]["name"]])
            found["matchFields"] = [{"key": "metadata.name", "operator": field_op, "values": [name]}]
        return found

    def affinity(self, index):
        rng = self.rng
        if index % 4 == 3 and rng.random() < 0.7:
            return None
        count = rng.randint(2, 3) if index % 3 == 0 else 1
        terms = [self.term(self.OPS[index % len(self.OPS)], self.anchor) if i == 0 else
                 self.term(None, rng.choice(self.nodes)) for i in range(count)]
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                 {"nodeSelectorTerms": terms}}}

    def node_selector(self, index):
        rng = self.rng
        if index % 3 != 1 and rng.random() < 0.7:
            return None
        anchor = self.anchor["metadata"].get("labels") or {}      # mostly pairs it has
        keys = rng.sample(sorted(anchor) if rng.random() < 0.8 else self.keys[:-1], rng.randint(1, 2))
        return {k: anchor[k] if k in anchor and rng.random() < 0.85 else
                rng.choice(sorted(self.values[k]) + ["no-such-value"]) for k in keys}

    def toleration(self, taint):
        rng = self.rng
        key, value, effect = taint["key"], taint.get("value", ""), taint["effect"]
        other = rng.choice([e for e in ("NoSchedule", "NoExecute", "PreferNoSchedule") if e != effect])
        wrong = value + "-not" if value else "some"
        forms = [
            {"key": key, "operator": "Exists", "effect": effect},
            {"key": key, "operator": "Exists"},
            {"key": key, "operator": "Equal", "value": value, "effect": effect},
            {"key": key, "operator": "Equal", "value": wrong, "effect": effect},
            {"key": key, "value": value},
            {"key": key, "operator": "Exists", "effect": other},
            {"operator": "Exists", "effect": rng.choice(("NoSchedule", "NoExecute"))},
        ]
        if effect == "NoExecute":   # how long it may stay (longer than the test); never filters
            forms.append({"key": key, "operator": "Equal", "value": value, "effect": effect,
                          "tolerationSeconds": 3600})
        return {k: v for k, v in rng.choice(forms).items() if v != ""}

    def tolerations(self, index):
        rng = self.rng
        if rng.random() < 0.05:
            return [{"operator": "Exists"}]
        pool = self.taints + [{"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}] \
            + 2 * (self.anchor["spec"].get("taints") or [])
        count = rng.randint(1, 4) if index % 2 == 0 else rng.randint(0, 3)
        return [self.toleration(rng.choice(pool)) for _ in range(count)]

    def spec(self, index):
        self.anchor = self.rng.choice(self.nodes)    # the node most of the spec is drawn from
        spec = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}}],
                "terminationGracePeriodSeconds": 0}
        parts = {"affinity": self.affinity(index), "nodeSelector": self.node_selector(index),
                 "tolerations": self.tolerations(index)}
        spec.update({k: v for k, v in parts.items() if v})
        if index % 3 == 2 or self.rng.random() < 0.25:
            claims = self.rng.sample(self.claims, 1 + (self.rng.random() < 0.3))
            spec["volumes"] = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                               for i, c in enumerate(claims)]
            spec["containers"][0]["volumeMounts"] = [{"name": f"v{i}", "mountPath": f"/v{i}"}
                                                     for i in range(len(claims))]
        return spec


def features(specs):
    """What the generated specs use, to check that they use everything."""
    seen = set()
    for spec in specs:
        required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution") or {}
        terms = required.get("nodeSelectorTerms") or []
        seen |= {"multi-term"} if len(terms) > 1 else set()
        for term in terms:
            seen |= {e["operator"] for e in term.get("matchExpressions") or ()}
            seen |= {"matchFields"} if term.get("matchFields") else set()
        seen |= {"nodeSelector"} if spec.get("nodeSelector") else set()
        seen |= {"volumes"} if spec.get("volumes") else set()
        for toleration in spec.get("tolerations") or ():
            seen.add(f"toleration {toleration.get('operator', 'Equal')}"
                     + ("" if toleration.get("effect") else " effect-less"))
    return seen


def pinned(spec, node):
    """The spec's copy that the scheduler may place on ``node`` only: each of its required terms
    ANDed with metadata.name In [node] (an empty term stays empty: it matches no node)."""
    pin = {"key": "metadata.name", "operator": "In", "values": [node]}
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        terms = [{"matchFields": [pin]}]
    else:
        terms = [dict(t, matchFields=(t.get("matchFields") or []) + [pin]) if t else t
                 for t in required["nodeSelectorTerms"]]
    node_affinity = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
    return dict(spec, affinity={"nodeAffinity": node_affinity})


def make_volumes(sandbox, stage, namespace):
    """The PVs and their pre-bound claims, once Bound: (namespace, claim) -> the PV as read."""
    pvs = volume_affinities()
    stage["pvs"] += sorted(pvs)
    apply_list(sandbox, [persistent_volume(n, namespace, s, t) for n, (s, t) in pvs.items()])
    apply_list(sandbox, [claim(n, namespace) for n in pvs])

    def bound():
        found = sandbox.get_json("pv", "-l", f"landing-oracle={namespace}")["items"]
        claims = sandbox.get_json("pvc", "-n", namespace)["items"]
        if len(found) == len(pvs) and all(p["status"].get("phase") == "Bound" for p in found) \
                and all(c["status"].get("phase") == "Bound" for c in claims):
            return {(namespace, f"claim-{p['metadata']['name']}"): p for p in found}
        return None
    return wait_until("the claims to be Bound", bound, timeout=120)


def scheduled(pod):
    """The node a copy was bound to, "" when the scheduler said Unschedulable, None if undecided."""
    if pod["spec"].get("nodeName"):
        return pod["spec"]["nodeName"]
    conditions = (pod.get("status") or {}).get("conditions") or ()
    if any(c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable"
           for c in conditions):
        return ""
    return None


def wait_scheduled(sandbox, namespace, count):
    """name -> (node or "", the scheduler's message), once every copy is decided."""
    last = {}

    def decided():
        pods = sandbox.get_json("pods", "-n", namespace)["items"]
        last["undecided"] = [p["metadata"]["name"] for p in pods if scheduled(p) is None]
        if len(pods) != count or last["undecided"]:
            return None
        return {p["metadata"]["name"]: (scheduled(p), f"bound to {p['spec']['nodeName']}"
                                        if scheduled(p) else " ".join(
            c.get("message", "") for c in p["status"].get("conditions") or ()
            if c["type"] == "PodScheduled")) for p in pods}
    try:
        return wait_until("every copy bound or Unschedulable", decided, timeout=400, interval=2)
    except AssertionError as e:
        raise AssertionError(f"{e}; undecided: {last.get('undecided', [])[:10]}") from e


@pytest.mark.timeout(900)
def test_the_landing_set_is_where_kube_scheduler_places_a_copy(stage, namespace, sandbox):
    seed = int(os.environ.get("LANDING_ORACLE_SEED", random.SystemRandom().randrange(1 << 32)))
    started = time.time()
    volumes = make_volumes(sandbox, stage, namespace)
    nodes = stage["nodes"]
    names = [n["metadata"]["name"] for n in nodes]
    # and a claim that does not exist: the scheduler and the planner both rule out every node
    generator = Generator(random.Random(seed), nodes, [c for _, c in volumes] + ["claim-missing"])
    specs = [generator.spec(i) for i in range(SPECS)]
    wanted = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "matchFields", "multi-term",
              "nodeSelector", "volumes", "toleration Exists", "toleration Equal",
              "toleration Exists effect-less"}
    assert wanted <= features(specs), f"seed {seed}: the specs miss {wanted - features(specs)}"

    copies = [{"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"s{i:02d}-{j}", "namespace": namespace,
                            "labels": {"landing-oracle/spec": str(i)}},
               "spec": pinned(spec, name)}
              for i, spec in enumerate(specs) for j, name in enumerate(names)]
    apply_list(sandbox, copies)
    placed = wait_scheduled(sandbox, namespace, len(copies))

    mismatches, landed, nowhere = [], 0, 0
    for i, spec in enumerate(specs):
        results = [placed[f"s{i:02d}-{j}"] for j in range(len(names))]
        strays = [(n, got) for n, (got, _) in zip(names, results) if got and got != n]
        assert not strays, f"seed {seed}: copies pinned to a node were bound elsewhere: {strays}"
        scheduler = {n for n, (got, _) in zip(names, results) if got}
        as_pod = {"metadata": {"name": f"s{i:02d}", "namespace": namespace}, "spec": spec}
        planner = set(landing.feasible_nodes(as_pod, nodes, volumes))
        landed, nowhere = landed + bool(scheduler), nowhere + (not scheduler)
        if planner != scheduler:
            why = {n: message for n, (_, message) in zip(names, results) if n in planner ^ scheduler}
            mismatches.append(f"spec {i}: {json.dumps(spec, sort_keys=True)}\n  planner "
                              f"{sorted(planner)}\n  scheduler {sorted(scheduler)}\n  "
                              f"the scheduler on the nodes that differ: {json.dumps(why)}")
    print(f"landing oracle: seed {seed}, {len(specs)} specs, {len(copies)} copies, {landed} specs "
          f"land somewhere, {nowhere} nowhere, {time.time() - started:.0f}s")
    assert not mismatches, f"seed {seed}: {len(mismatches)} of {len(specs)} specs differ\n" + \
        "\n".join(mismatches)
    assert landed >= SPECS // 4 and nowhere, f"seed {seed}: {landed} specs land somewhere, {nowhere} nowhere"
