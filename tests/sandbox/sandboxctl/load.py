"""Loading, waiting for and resetting the seed scenario through the API."""
import json
import time

from . import seed
from .kube import path
from .procs import SandboxError

WORKLOAD_PLURALS = ["deployments", "statefulsets", "daemonsets", "jobs", "poddisruptionbudgets"]
SYSTEM_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease"}
NAME_LABEL = "app.kubernetes.io/name"


def wait_for(what, check, timeout=120, interval=0.25):
    """Poll check() until it returns a true value; check returns (ok, detail)."""
    deadline = time.time() + timeout
    detail = ""
    while time.time() < deadline:
        ok, detail = check()
        if ok:
            return
        time.sleep(interval)
    raise SandboxError(f"timed out after {timeout}s waiting for {what}: {detail}")


def _ready(node):
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in node.get("status", {}).get("conditions", []))


def _taints(node):
    return sorted(json.dumps(t, sort_keys=True) for t in node.get("spec", {}).get("taints") or [])


def restore_nodes(kube, desired, delete_extra=True):
    """Make every desired node exist with exactly its labels, taints, schedulability."""
    want = {n["metadata"]["name"]: n for n in desired}
    have = {n["metadata"]["name"]: n for n in kube.list("nodes")}
    for name, node in want.items():
        cur = have.get(name)
        if cur is None:
            kube.create(node, exist_ok=True)
            continue
        labels = dict(node["metadata"]["labels"])
        labels.update({k: None for k in cur["metadata"].get("labels", {}) if k not in labels})
        taints = node["spec"].get("taints") or None
        # The seed's annotations (Cluster API's) are put back; others' (kwok's, kubelet's) stay.
        annotations = node["metadata"].get("annotations") or {}
        have_annotations = cur["metadata"].get("annotations") or {}
        if (cur["metadata"].get("labels") != node["metadata"]["labels"]
                or any(have_annotations.get(k) != v for k, v in annotations.items())
                or _taints(cur) != sorted(json.dumps(t, sort_keys=True) for t in taints or [])
                or cur["spec"].get("unschedulable")):
            kube.patch("nodes", name, {"metadata": {"labels": labels, "annotations": annotations},
                                       "spec": {"taints": taints, "unschedulable": None}})
    if delete_extra:
        for name in set(have) - set(want):
            kube.delete("nodes", name)


def wait_nodes(kube, names, taints_of, timeout=120):
    def check():
        nodes = {n["metadata"]["name"]: n for n in kube.list("nodes")}
        for name in names:
            n = nodes.get(name)
            if n is None or not _ready(n):
                return False, f"node {name} not Ready"
            want = sorted(json.dumps(t, sort_keys=True) for t in taints_of(name))
            if _taints(n) != want or n["spec"].get("unschedulable"):
                return False, f"node {name} taints {n['spec'].get('taints')}"
        return True, ""
    wait_for("nodes", check, timeout)


def set_schedulable(kube, targets, all_nodes):
    for name in all_nodes:
        kube.patch("nodes", name, {"spec": {"unschedulable": None if name in targets else True}})
    time.sleep(0.5)  # let the scheduler's informer see the change


def _pods_by_workload(kube, namespaces):
    out = {}
    for ns in namespaces:
        for p in kube.list("pods", ns):
            key = (ns, p["metadata"].get("labels", {}).get("app.kubernetes.io/name"))
            out.setdefault(key, []).append(p)
    return out


# After the API server restarts of tests/e2e/test_control_plane_faults.py the controller-manager and
# kwok can take minutes to catch up: 166 s to count a removed node out of a DaemonSet's desired pods
# (a CI run), over 120 s to see a Job's pod Succeeded (scripts/soak --control-plane, 2026-12-05).
AFTER_FAULTS_TIMEOUT = 300


def wait_workloads(kube, workloads, targets, timeout=AFTER_FAULTS_TIMEOUT):
    """Wait until each workload's pods run (Jobs: succeeded) on target nodes.

    A pod that the scheduler put elsewhere (it had not yet seen a cordon) is
    deleted, so that its controller replaces it."""
    namespaces = sorted({obj["metadata"]["namespace"] for obj, _ in workloads})

    def check():
        pods = _pods_by_workload(kube, namespaces)
        for obj, count in workloads:
            meta = obj["metadata"]
            got = [p for p in pods.get((meta["namespace"], meta["name"]), [])
                   if not p["metadata"].get("deletionTimestamp")]
            for p in got:
                node = p["spec"].get("nodeName")
                if node and targets is not None and node not in targets:
                    kube.delete("pods", p["metadata"]["name"], meta["namespace"], gracePeriodSeconds=0)
                    return False, f"moved misplaced pod {p['metadata']['name']}"
            want_phase = "Succeeded" if obj["kind"] == "Job" else "Running"
            ok = [p for p in got if p["status"].get("phase") == want_phase]
            if len(ok) != count or len(got) != count:
                seen = ", ".join(f"{p['metadata']['name']} {p['status'].get('phase')} on "
                                 f"{p['spec'].get('nodeName') or 'no node'}" for p in got)
                return False, (f"{obj['kind']} {meta['namespace']}/{meta['name']}: "
                               f"{len(ok)}/{count} {want_phase} (pods: {seen or 'none'})")
        return True, ""
    wait_for("workload pods", check, timeout)


def wait_daemonsets(kube, daemonsets, timeout=AFTER_FAULTS_TIMEOUT):
    def check():
        for obj, count in daemonsets:
            m = obj["metadata"]
            st = kube.get("daemonsets", m["name"], m["namespace"]).get("status", {})
            if st.get("desiredNumberScheduled") != count or st.get("numberReady") != count:
                return False, (f"DaemonSet {m['namespace']}/{m['name']} ready {st.get('numberReady')}/"
                               f"{count}, desired {st.get('desiredNumberScheduled')}")
        return True, ""
    wait_for("DaemonSets", check, timeout)


def wait_pdbs(kube, pdbs, timeout=120):
    def check():
        for obj, allowed in pdbs:
            m = obj["metadata"]
            cur = kube.get("poddisruptionbudgets", m["name"], m["namespace"])
            st = cur.get("status", {})
            if (st.get("observedGeneration") != cur["metadata"]["generation"]
                    or st.get("disruptionsAllowed") != allowed):
                return False, (f"PDB {m['namespace']}/{m['name']} "
                               f"status {st.get('disruptionsAllowed')}/{allowed}")
        return True, ""
    wait_for("PodDisruptionBudgets", check, timeout)


def create_volumes(kube, timeout=120):
    """Create the seed's PersistentVolumes and their pre-bound claims; wait until each claim is Bound."""
    volumes = seed.volumes()
    for obj in volumes:
        kube.create(obj)
    claims = [obj["metadata"] for obj in volumes if obj["kind"] == "PersistentVolumeClaim"]

    def check():
        for m in claims:
            claim = kube.get("persistentvolumeclaims", m["name"], m["namespace"])
            phase = claim.get("status", {}).get("phase")
            if phase != "Bound":
                return False, f"PVC {m['namespace']}/{m['name']} is {phase}"
        return True, ""
    wait_for("the seed's claims to bind", check, timeout)


def load_workloads(kube, log):
    """Create DaemonSets, the volumes, the phased workloads and the PDBs; wait until settled."""
    for ns in seed.NAMESPACES:
        cur = kube.get_or_none("namespaces", ns)
        if cur is not None and cur["metadata"].get("deletionTimestamp"):  # a test deleted it
            wait_for(f"namespace {ns} to finish terminating",
                     lambda ns=ns: (kube.get_or_none("namespaces", ns) is None, ""), timeout=180)
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, exist_ok=True)
    daemonsets = seed.daemonsets()
    for obj, _ in daemonsets:
        kube.create(obj)
    create_volumes(kube)
    try:
        for targets, workloads in seed.phases():
            set_schedulable(kube, targets, seed.ALL_NODES)
            started = time.monotonic()
            for obj, _ in workloads:
                kube.create(obj)
            wait_workloads(kube, workloads, targets)
            log(f"placed {len(workloads)} workloads on {', '.join(targets)} "
                f"in {time.monotonic() - started:.1f}s")
    finally:
        restore_nodes(kube, seed.nodes())
    pdbs = seed.pdbs()
    for obj, _ in pdbs:
        kube.create(obj)
    wait_nodes(kube, seed.ALL_NODES, seed.node_taints)
    wait_daemonsets(kube, daemonsets)
    wait_pdbs(kube, pdbs)


def load(kube, log):
    restore_nodes(kube, seed.nodes())
    wait_nodes(kube, seed.ALL_NODES, seed.node_taints)
    log("9 seed nodes Ready")
    load_workloads(kube, log)


def snapshot(kube):
    """What reset compares: scenario objects (uid, generation) and pods (node, phase)."""
    namespaces = {n["metadata"]["name"]: n for n in kube.list("namespaces")}
    # A namespace being deleted is not part of the scenario (reset has just deleted the tests' ones).
    snap = {"namespaces": sorted(name for name, n in namespaces.items()
                                 if not n["metadata"].get("deletionTimestamp")), "objects": []}
    for ns in seed.NAMESPACES:
        cur = namespaces.get(ns, {"metadata": {"uid": None}, "status": {}})
        snap["objects"].append(["namespaces", ns, ns, cur["metadata"]["uid"], cur["status"].get("phase")])
        for plural in WORKLOAD_PLURALS + ["pods"]:
            for obj in kube.list(plural, ns):
                m = obj["metadata"]
                # A pod's row ends with its workload (the seed's pods carry its name as a label).
                extra = ([obj["spec"].get("nodeName"), obj["status"].get("phase"),
                          bool(m.get("deletionTimestamp")), (m.get("labels") or {}).get(NAME_LABEL)]
                         if plural == "pods" else [m.get("generation"), bool(m.get("deletionTimestamp"))])
                snap["objects"].append([plural, ns, m["name"], m["uid"], *extra])
        for claim in kube.list("persistentvolumeclaims", ns):
            m = claim["metadata"]
            # Terminating counts: a claim a test deleted stays Bound while a pod still uses it.
            snap["objects"].append(["persistentvolumeclaims", ns, m["name"], m["uid"],
                                    claim.get("status", {}).get("phase"), bool(m.get("deletionTimestamp"))])
    for name in _seed_volume_names():
        pv = kube.get_or_none("persistentvolumes", name) or {"metadata": {"uid": None}}
        snap["objects"].append(["persistentvolumes", "", name, pv["metadata"]["uid"],
                                pv.get("status", {}).get("phase"),
                                bool(pv["metadata"].get("deletionTimestamp"))])
    snap["objects"].sort()
    return snap


def _seed_volume_names():
    return [obj["metadata"]["name"] for obj in seed.volumes() if obj["kind"] == "PersistentVolume"]


def clear_workloads(kube, timeout=120):
    """Delete every workload, pod and claim in the scenario namespaces, and the seed's volumes."""
    for ns in seed.NAMESPACES:
        for plural in WORKLOAD_PLURALS + ["replicasets", "persistentvolumeclaims"]:
            kube.request("DELETE", f"{_coll(plural, ns)}?propagationPolicy=Background")

    def check():
        left = 0
        for ns in seed.NAMESPACES:
            pods = kube.list("pods", ns)
            if pods:
                kube.request("DELETE", f"{_coll('pods', ns)}?gracePeriodSeconds=0")
            left += len(pods) + sum(len(kube.list(p, ns))
                                    for p in WORKLOAD_PLURALS + ["replicasets", "persistentvolumeclaims"])
        for name in _seed_volume_names():  # Released once its claim is gone; Retain keeps it until then
            if kube.get_or_none("persistentvolumes", name) is not None:
                kube.delete("persistentvolumes", name)
                left += 1
        return left == 0, f"{left} objects left"
    wait_for("scenario objects to be deleted", check, timeout, interval=0.5)


def _coll(plural, ns):
    return path(plural, ns)


def delete_extra_namespaces(kube, baseline, timeout=120):
    """Delete the namespaces created after `up` and wait until none of their pods is left.

    The namespace goes first, so that its controllers can create no pod after the pods' delete
    (a ReplicaSet did, between the two, and a reader then saw its Pending pod).  The namespace
    itself may take longer to go (the namespace controller's sweep): a pod left in it is what a
    later test could see, so that is what is waited for."""
    keep = set(baseline["namespaces"]) | SYSTEM_NAMESPACES
    gone, leaving = [], []
    for ns in kube.list("namespaces"):
        name = ns["metadata"]["name"]
        if name in keep:
            continue
        leaving.append(name)
        if not ns["metadata"].get("deletionTimestamp"):
            kube.delete("namespaces", name)
            gone.append(name)

    def no_pods_left():
        left = []
        for name in leaving:
            pods = kube.list("pods", name)
            if pods:
                kube.request("DELETE", f"{_coll('pods', name)}?gracePeriodSeconds=0")
                left.append(f"{name}: {len(pods)}")
        return not left, f"pods left in {', '.join(left)}"
    wait_for("the pods of deleted namespaces to be gone", no_pods_left, timeout, interval=0.5)
    return gone


def changed_workloads(baseline, current):
    """The phase workloads (namespace, name) and PDBs a test changed, from two snapshots: those
    whose object or pods differ.  None when anything else differs (a DaemonSet or its pods, a
    namespace, a volume, a pod of no seed workload): then only a whole rebuild restores it."""
    phased = {(obj["metadata"]["namespace"], obj["metadata"]["name"])
              for _, workloads in seed.phases() for obj, _ in workloads}
    budgets = {(obj["metadata"]["namespace"], obj["metadata"]["name"]) for obj, _ in seed.pdbs()}
    workloads, pdbs = set(), set()
    for row in {tuple(r) for r in baseline} ^ {tuple(r) for r in current}:
        plural, ns = row[0], row[1]
        key = (ns, row[-1] if plural == "pods" else row[2])
        if plural == "poddisruptionbudgets" and key in budgets:
            pdbs.add(key)
        elif plural in ("pods", "deployments", "statefulsets", "jobs") and key in phased:
            workloads.add(key)
        else:
            return None
    return workloads, pdbs


def rebuild_workloads(kube, workloads, pdbs, log):
    """Delete and recreate only these phase workloads (on their phase's nodes, as `load` places
    them) and PDBs; then wait until every seed PDB allows what it allowed after `load`."""
    for ns, name in sorted(workloads):
        for plural in ("deployments", "statefulsets", "jobs"):
            kube.delete(plural, name, ns, propagationPolicy="Background")
    for ns, name in sorted(pdbs):
        kube.delete("poddisruptionbudgets", name, ns)

    def gone():
        left = 0
        for ns, name in workloads:
            selector = {"labelSelector": f"{NAME_LABEL}={name}"}
            left += sum(kube.get_or_none(p, name, ns) is not None
                        for p in ("deployments", "statefulsets", "jobs"))
            left += len(kube.list("replicasets", ns, **selector))
            kube.request("DELETE", f"{_coll('replicasets', ns)}?labelSelector={NAME_LABEL}%3D{name}")
            pods = kube.list("pods", ns, **selector)
            if pods:
                kube.request("DELETE", f"{_coll('pods', ns)}?gracePeriodSeconds=0"
                                       f"&labelSelector={NAME_LABEL}%3D{name}")
            left += len(pods)
        left += sum(kube.get_or_none("poddisruptionbudgets", name, ns) is not None for ns, name in pdbs)
        return left == 0, f"{left} objects left"
    wait_for("the changed workloads to be deleted", gone, timeout=120, interval=0.5)
    try:
        for targets, phase in seed.phases():
            mine = [(obj, n) for obj, n in phase
                    if (obj["metadata"]["namespace"], obj["metadata"]["name"]) in workloads]
            if not mine:
                continue
            set_schedulable(kube, targets, seed.ALL_NODES)
            for obj, _ in mine:
                kube.create(obj)
            wait_workloads(kube, mine, targets)
            log(f"recreated {len(mine)} workloads on {', '.join(targets)}")
    finally:
        restore_nodes(kube, seed.nodes())
    every = seed.pdbs()
    for obj, _ in every:
        if (obj["metadata"]["namespace"], obj["metadata"]["name"]) in pdbs:
            kube.create(obj)
    wait_nodes(kube, seed.ALL_NODES, seed.node_taints)
    wait_pdbs(kube, every)


def reset(kube, baseline, log):
    """Restore nodes; rebuild what changed: only the changed workloads when that is all a test
    changed, else every workload.  Returns the new baseline (None if nothing changed)."""
    restore_nodes(kube, seed.nodes())
    gone = delete_extra_namespaces(kube, baseline)
    if gone:
        log(f"deleted namespaces created after up: {', '.join(gone)}")
    wait_nodes(kube, seed.ALL_NODES, seed.node_taints)
    cur = snapshot(kube)
    if cur["objects"] == baseline["objects"]:
        log("workloads unchanged; nodes restored")
        return None
    changed = changed_workloads(baseline["objects"], cur["objects"])
    if changed is not None:
        log(f"{len(changed[0])} workloads and {len(changed[1])} PDBs changed; recreating them")
        rebuild_workloads(kube, *changed, log)
    else:
        log("workloads changed; recreating them")
        clear_workloads(kube)
        load_workloads(kube, log)
    new = snapshot(kube)
    # The namespaces to keep are those of `up`, always: a test namespace still listed here
    # (its deletion in progress) must not become part of the baseline, or it would survive
    # every later reset with whatever a test left in it.
    new["namespaces"] = baseline["namespaces"]
    return new
