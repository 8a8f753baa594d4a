"""evacuate's advice around the move, on the seed sandbox (issue #13, items 3 and 4): a pod that
fits on no CPU worker is warned of before the first eviction, and once it is evicted its
replacement, which the real kube-scheduler marks Unschedulable, is reported with the
scheduler's message, while the cluster shows it Pending."""

import json

from sandbox_helpers import CPU_WORKERS, GPU_A, GPU_B, GPU_NODES, wait_until

WORKER_CPU = 16          # each seed CPU worker's CPU capacity (tests/sandbox/sandboxctl/seed.py)
HUNGRY_CPU = WORKER_CPU + 1


def hungry(namespace):
    """A Deployment whose pod needs more CPU than any CPU worker has, preferring GPU node A."""
    labels = {"app": "hungry"}
    spec = {"containers": [{"name": "main", "image": "busybox",
                            "resources": {"requests": {"cpu": str(HUNGRY_CPU), "memory": "64Mi"}}}],
            "terminationGracePeriodSeconds": 0,
            "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "preference": {"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [GPU_A]}]}}]}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "hungry", "namespace": namespace},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


def hungry_pods(sandbox, namespace):
    return sandbox.pods("-n", namespace, "-l", "app=hungry")


def index_of(lines, needle):
    return next((i for i, line in enumerate(lines) if needle in line), -1)


def scheduled_condition(pod):
    return next((c for c in pod["status"].get("conditions") or () if c["type"] == "PodScheduled"), {})


def test_a_pod_too_large_for_the_workers_is_warned_of_and_its_replacement_reported(
        gpuisolate, clean, namespace):
    clean.kubectl("apply", "-f", "-", input=json.dumps(hungry(namespace)))
    [old] = wait_until("the hungry pod running on a GPU node", lambda: [
        p for p in hungry_pods(clean, namespace)
        if p["status"].get("phase") == "Running" and p["spec"].get("nodeName") in GPU_NODES])
    allocatable = [clean.get_json("node", n)["status"]["allocatable"]["cpu"] for n in CPU_WORKERS]
    # the premise: no worker can take it (allocatable is whole cores or millicores)
    assert max(int(c[:-1]) / 1000 if c.endswith("m") else int(c) for c in allocatable) < HUNGRY_CPU

    result = gpuisolate("evacuate", GPU_A, GPU_B, "--taint-first", "--delete-emptydir-data",
                        "--timeout", "3m", "-o", "json")
    lines = result.stderr.splitlines()
    warning = index_of(lines, f"a pod needs {HUNGRY_CPU:.1f} CPU; the landing node with the most "
                              "free has ")
    assert warning >= 0, result.stderr
    assert 0 <= warning < index_of(lines, "evicting pod"), result.stderr
    assert lines[warning].endswith("its replacement will stay Pending")

    # The cluster: the hungry pod was evicted and its replacement is Pending, Unschedulable.
    [new] = wait_until("the hungry pod's replacement", lambda: [
        p for p in hungry_pods(clean, namespace) if p["metadata"]["uid"] != old["metadata"]["uid"]])
    condition = scheduled_condition(new)
    assert new["status"]["phase"] == "Pending" and not new["spec"].get("nodeName")
    assert (condition.get("status"), condition.get("reason")) == ("False", "Unschedulable")
    assert "Insufficient cpu" in condition["message"]

    # The report: a warning on stderr after the evictions, and the document's node entry.
    owner = next(r for r in new["metadata"]["ownerReferences"] if r.get("controller"))
    reported = f"replacement {namespace}/{new['metadata']['name']} of ReplicaSet/{owner['name']} " \
               "is Unschedulable: "
    line = index_of(lines, reported)
    assert line > index_of(lines, f"evicted pod {namespace}/{old['metadata']['name']}") >= 0, \
        result.stderr
    assert lines[line].split(reported, 1)[1] == condition["message"]
    doc = json.loads(result.stdout)
    entries = [u for n in doc["nodes"] for u in n["unschedulable"]]
    source = next(n for n in doc["nodes"] if n["name"] == old["spec"]["nodeName"])
    assert entries == source["unschedulable"] == [
        {"pod": f"{namespace}/{new['metadata']['name']}", "owner": f"ReplicaSet/{owner['name']}",
         "message": condition["message"]}]
    # Advice only: the exit code is the one without it (the seed's nai-db PDB never allows).
    assert result.returncode == 10, result.stderr
