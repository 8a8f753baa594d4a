"""The -o json|yaml contracts of docs/output.md, pinned: gpuisolate.status/v1 and
gpuisolate.evacuate/v1.  Every documented key with its type (and the documented values of
the enumerations) is written out below; the commands' real documents and the examples in
docs/output.md must both match it exactly, so a renamed, dropped or retyped key fails.  The
sample runs must reach every key of the schema, so none is pinned without being checked."""

import json
import pathlib
import re

import pytest
import yaml

from ..evict_fakes import RBAC_403, FakeClock, FakeCluster, pdb_429
from ..factories import (
    GPU_A,
    GPU_B,
    GPU_TAINT,
    GPU_TOLERATION,
    INFERENCE_TOLERATIONS,
    gpu_node,
    node,
    owner,
    pdb,
    pod,
    unschedulable_replacement,
)
from .helpers import run_command
from .test_evacuate import execute, seed_like, web

DOC = pathlib.Path(__file__).resolve().parents[3] / "docs" / "output.md"


class Optional:
    """A key that is present only sometimes."""

    def __init__(self, schema):
        self.schema = schema


class MapOf:
    """A mapping from free-form names (reasons, label keys) to values of one schema."""

    def __init__(self, schema):
        self.schema = schema


class OneOf:
    def __init__(self, *values):
        self.values = values


NULLABLE_STR = (str, type(None))
POD_REF = str                                         # namespace/name

STATUS_POD = {"namespace": str, "name": str, "uid": str, "owner": str,
              "verdict": OneOf("move", "blocked", "stay", "wait"),
              "reason": OneOf("not-tolerated", "gated", "daemonset", "daemonset-orphan", "mirror",
                              "finished", "gpu-request", "resource-claim", "tolerates-without-gpu",
                              "tolerates-everything",
                              "terminating", "nowhere-to-land"),
              "message": str, "flags": [str], "pdbs": [str], "landingNodes": Optional(int),
              "warning": Optional(str)}
STATUS = {
    "schemaVersion": OneOf("gpuisolate.status/v1"), "serverVersion": str,
    "taint": str,
    "nodes": [{"name": str, "gpuPresent": NULLABLE_STR, "gpuCount": int,
               "signal": {"code": str, "message": str}, "taints": [MapOf(str)],
               "gpuTainted": bool, "unschedulable": bool,
               "manager": NULLABLE_STR, "pool": NULLABLE_STR,
               "summary": {"wouldMove": int, "stay": int, "nowhereToLand": int, "terminating": int,
                           "leaks": int, "stayReasons": MapOf(int)},
               "pods": [STATUS_POD]}],
    "pdbBlockers": [{"namespace": str, "name": str, "disruptionsAllowed": int,
                     "currentHealthy": int, "desiredHealthy": int, "expectedPods": int,
                     "neverAllows": NULLABLE_STR}],
    "warnings": [str],
    "guard": Optional({"mode": OneOf("absent", "unknown", "Warn", "Audit", "Deny"),
                       "exemptNamespaces": [str], "wouldReject": [str], "why": Optional(str)}),
}

SEAL = {"applied": bool, "taint": str, "fence": str, "fenceRemoved": bool, "note": str,
        "wouldDelete": [{"pod": POD_REF, "lacks": str, "afterSeconds": int,
                         "why": [OneOf("pdb-guarded", "gpu-consumer", "daemonset", "mirror",
                                       "no-controller", "finished")],
                         "pdbs": [str]}]}
EVACUATE_NODE = {"name": str, "seconds": float, "gpuTainted": (bool, type(None)),
                 "refusal": [str], "stayed": MapOf([POD_REF]),
                 "nowhereToLand": [{"pod": POD_REF, "reason": str, "fix": str}]}
PLANNED_NODE = dict(EVACUATE_NODE, result=OneOf("planned", "refused"), wouldMove=[POD_REF],
                    blocked=[{"pod": POD_REF, "message": str, "flags": [str], "pdbs": [str]}],
                    terminating=[POD_REF], noExecute=Optional(SEAL))
RUN_NODE = dict(EVACUATE_NODE,
                result=OneOf("evacuated", "checked", "incomplete", "interrupted", "not-started"),
                pending=[{"pod": POD_REF, "state": str, "reason": str}],
                failed=[{"pod": POD_REF, "reason": str}],
                arrived=[{"pod": POD_REF, "action": OneOf("evict", "stay", "blocked", "wait"),
                          "reason": str}],
                unschedulable=[{"pod": POD_REF, "owner": str, "message": str}],
                noExecute=Optional(SEAL))
EVACUATE = {"schemaVersion": OneOf("gpuisolate.evacuate/v1"), "taint": str,
            "dryRun": OneOf("none", "client", "server"), "nodes": [dict]}


def node_schema(doc, node_doc):
    """A node is its plan, or what happened to it: ``moved``, or ``wouldMove`` in a server dry run."""
    if node_doc.get("result") in ("planned", "refused"):
        return "planned", PLANNED_NODE
    moved = "wouldMove" if doc["dryRun"] == "server" else "moved"
    return f"run-{moved}", dict(RUN_NODE, **{moved: [POD_REF]})


# -- the checker ----------------------------------------------------------------------------------
def check(value, schema, path, seen):
    """Asserts that ``value`` has exactly the shape ``schema`` pins; records the paths reached."""
    seen.add(path)
    if isinstance(schema, dict):
        assert type(value) is dict, f"{path}: {value!r} is not a mapping"
        required = {k for k, v in schema.items() if not isinstance(v, Optional)}
        assert required <= set(value) <= set(schema), \
            f"{path}: keys {sorted(value)}, the schema has {sorted(schema)}"
        for key, item in value.items():
            sub = schema[key].schema if isinstance(schema[key], Optional) else schema[key]
            check(item, sub, f"{path}.{key}", seen)
    elif isinstance(schema, list):
        assert type(value) is list, f"{path}: {value!r} is not a list"
        for item in value:
            check(item, schema[0], f"{path}[]", seen)
    elif isinstance(schema, MapOf):
        assert type(value) is dict and all(type(k) is str for k in value), path
        for item in value.values():
            check(item, schema.schema, f"{path}{{}}", seen)
    elif isinstance(schema, OneOf):
        assert value in schema.values, f"{path}: {value!r} is none of {schema.values}"
    else:
        types = schema if isinstance(schema, tuple) else (schema,)
        assert type(value) in types, f"{path}: {value!r} is not {types}"   # True is no int


def paths(schema, path):
    """Every path ``check`` can reach in ``schema``."""
    found = {path}
    if isinstance(schema, Optional):
        return paths(schema.schema, path)
    if isinstance(schema, dict):
        for key, sub in schema.items():
            found |= paths(sub, f"{path}.{key}")
    elif isinstance(schema, list):
        found |= paths(schema[0], f"{path}[]")
    elif isinstance(schema, MapOf):
        found |= paths(schema.schema, f"{path}{{}}")
    return found


def check_status(doc, seen):
    check(doc, STATUS, "$", seen)


def check_evacuate(doc, seen):
    check(doc, EVACUATE, "$", seen)
    for node_doc in doc["nodes"]:
        name, schema = node_schema(doc, node_doc)
        check(node_doc, schema, name, seen)


def both_formats(run):
    """The document of ``run(output_format)`` in json and in yaml, which must be equal (but for
    the time spent on each node, which the fake clock does not make repeatable)."""
    as_json, as_yaml = json.loads(run("json")), yaml.safe_load(run("yaml"))
    assert untimed(as_json) == untimed(as_yaml)
    return as_json


def untimed(doc):
    return dict(doc, nodes=[{k: v for k, v in n.items() if k != "seconds"} for n in doc["nodes"]])


def documented(schema_version):
    """The yaml examples of docs/output.md for one schema."""
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    found = [yaml.safe_load(b) for b in blocks if f"schemaVersion: {schema_version}\n" in b]
    assert found, f"docs/output.md has no example of {schema_version}"
    return found


# -- gpuisolate.status/v1 ---------------------------------------------------------------------------
def status_cluster():
    ds = owner("DaemonSet", "cilium")
    web_pdb = pdb("web", "apps", selector={"matchLabels": {"app": "web"}}, min_available=1,
                  allowed=0, desired=1, healthy=1, expected=1)
    nodes = [gpu_node(GPU_A, taints=[GPU_TAINT]), gpu_node(GPU_B),
             node("cpu-1", capacity={"nvidia.com/gpu": "1"})]
    nodes[0]["metadata"]["annotations"] = {"cluster.x-k8s.io/machine": GPU_A,
                                           "cluster.x-k8s.io/owner-kind": "MachineSet",
                                           "cluster.x-k8s.io/owner-name": "nkpnai-gpupool-1-z9mz6-pl9k2"}
    pods = [pod("cilium", "kube-system", owner_ref=ds),
            pod("web-1", "apps", labels={"app": "web"}),
            pod("cache", "apps", volumes=[{"name": "c", "emptyDir": {}}]),
            pod("gpu-job", requests={"nvidia.com/gpu": "1"}),
            pod("llama", tolerations=INFERENCE_TOLERATIONS, requests={"nvidia.com/gpu": "1"}),
            pod("tol", tolerations=[GPU_TOLERATION], node_name=GPU_B),
            pod("old", deleting=True, node_name=GPU_B),
            pod("pinned", "apps", node_selector={"kubernetes.io/hostname": GPU_A})]
    return FakeCluster(nodes, pods, [web_pdb])


@pytest.mark.parametrize("argv", [[], [GPU_B, "cpu-1"]], ids=["selected", "named"])
def test_status_documents_keep_the_v1_schema(argv):
    doc = both_formats(lambda fmt: run_command(status_cluster(), "status", *argv, "-o", fmt)[1])
    check_status(doc, set())


def test_the_status_samples_reach_every_key_of_the_schema():
    seen = set()
    for argv in ([], [GPU_B, "cpu-1"]):
        check_status(json.loads(run_command(status_cluster(), "status", *argv, "-o", "json")[1]),
                     seen)
    unreadable = status_cluster()                    # the guard's "why": a role without its rule
    unreadable.admission_error = RBAC_403
    check_status(json.loads(run_command(unreadable, "status", "-o", "json")[1]), seen)
    assert paths(STATUS, "$") - seen == set()


def test_the_documented_status_example_has_the_schema():
    for example in documented("gpuisolate.status/v1"):
        check_status(example, set())


# -- gpuisolate.evacuate/v1 -------------------------------------------------------------------------
def plan_run(fmt):
    nodes, pods = seed_like()
    pods.append(web("web-old", deleting=True))
    pods.append(pod("pinned", "apps", node_selector={"kubernetes.io/hostname": GPU_A}))
    cluster = FakeCluster(nodes, pods, [pdb("grafana", "kommander", selector={})])
    return execute(cluster, "--dry-run=client", "-o", fmt)[1]


def eviction_run(fmt):
    nodes, pods = seed_like()
    pods.append(pod("db-0", "apps", labels={"app": "db"}, node_name=GPU_A))
    pods.append(pod("pinned", "apps", node_selector={"kubernetes.io/hostname": GPU_A}))

    def arrives(cluster, name):
        if name == "web-1":
            cluster.pods.append(pod("sneaky", "default", owner_ref=None, node_name=GPU_A))
    cluster = FakeCluster(nodes, pods, script={"db-0": [RBAC_403]}, on_evict=arrives)
    return execute(cluster, GPU_A, "-o", fmt)[1]


def unschedulable_run(fmt):
    """The replacement of a moved pod is marked Unschedulable by the scheduler."""
    nodes, pods = seed_like()

    def replaced(cluster, name):
        if name == "web-1":
            cluster.pods.append(unschedulable_replacement("web-5d4f8-new", "apps"))
    cluster = FakeCluster(nodes, pods, on_evict=replaced)
    return execute(cluster, GPU_A, "-o", fmt)[1]


def deadline_run(fmt):
    nodes, pods = seed_like()
    blocking = pdb("web", "apps", selector={"matchLabels": {"app": "web"}}, allowed=0, desired=1,
                   healthy=0, expected=2)
    cluster = FakeCluster(nodes, pods, [blocking], script={"web-1": [pdb_429("web", 1, 0)]})
    return execute(cluster, "--delete-emptydir-data", "--timeout", "1m", "-o", fmt,
                   clock=FakeClock(lanes_only=True))[1]


def server_dry_run(fmt):
    nodes, pods = seed_like()
    pods += [pod("db-0", "apps", labels={"app": "db"}, node_name=GPU_A),
             pod("api-0", "apps", node_name=GPU_A),
             pod("pinned", "apps", node_selector={"kubernetes.io/hostname": GPU_A})]
    never = pdb("db", "apps", selector={"matchLabels": {"app": "db"}}, max_unavailable=0,
                allowed=0, desired=1, healthy=1, expected=1)
    cluster = FakeCluster(nodes, pods, [never],
                          script={"db-0": [pdb_429("db", 1, 1)], "api-0": [RBAC_403]})
    return execute(cluster, GPU_A, "--dry-run=server", "-o", fmt)[1]


def seal_run(fmt, *dry_run):
    """--taint-first with a NoExecute taint on untainted nodes: node A keeps its fence (a PDB-guarded
    GPU pod and a DaemonSet pod lack the toleration), node B is sealed."""
    nodes, pods = seed_like(tainted=False)
    pods = [p for p in pods if p["spec"]["nodeName"] == GPU_A and p["metadata"]["name"] != "job-done"]
    pods[1]["metadata"]["labels"] = {"app": "llama"}
    guard = pdb("llama", "nai-admin", selector={"matchLabels": {"app": "llama"}}, allowed=0)
    pods.append(pod("web-2", "apps", node_name=GPU_B))
    cluster = FakeCluster(nodes, pods, [guard])
    # No deadline: the fake clock's time depends on how the watch threads interleave.
    return execute(cluster, "--taint-first", "--gpu-taint", "nvidia.com/gpu=true:NoExecute",
                   "--timeout", "0", "-o", fmt, *dry_run)[1]


def seal_plan_run(fmt):
    return seal_run(fmt, "--dry-run=client")


def seal_server_run(fmt):
    return seal_run(fmt, "--dry-run=server")


RUNS = [plan_run, eviction_run, unschedulable_run, deadline_run, server_dry_run, seal_run, seal_plan_run,
        seal_server_run]


@pytest.mark.parametrize("run", RUNS, ids=[r.__name__ for r in RUNS])
def test_evacuate_documents_keep_the_v1_schema(run):
    check_evacuate(both_formats(run), set())


def test_the_evacuate_samples_reach_every_key_of_the_schema():
    seen = set()
    for run in RUNS:
        check_evacuate(json.loads(run("json")), seen)
    wanted = (paths(EVACUATE, "$") | paths(PLANNED_NODE, "planned")
              | paths(dict(RUN_NODE, moved=[POD_REF]), "run-moved")
              | paths(dict(RUN_NODE, wouldMove=[POD_REF]), "run-wouldMove"))
    # A node the preflight refused is described by its plan, so a run's refusal stays empty.
    # A server dry run looks for no arrivals (nothing moved) and watches no replacements.
    wanted -= {"run-moved.refusal[]", "run-wouldMove.refusal[]", "run-wouldMove.arrived[]",
               "run-wouldMove.arrived[].pod", "run-wouldMove.arrived[].action",
               "run-wouldMove.arrived[].reason", "run-wouldMove.unschedulable[]",
               "run-wouldMove.unschedulable[].pod", "run-wouldMove.unschedulable[].owner",
               "run-wouldMove.unschedulable[].message"}
    assert wanted - seen == set()


def test_the_documented_evacuate_examples_have_the_schema():
    examples = documented("gpuisolate.evacuate/v1")
    seen = set()
    for example in examples:
        check_evacuate(example, seen)
    assert {"planned", "run-moved"} <= seen      # both kinds of node are documented
