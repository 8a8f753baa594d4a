"""Least privilege, against the sandbox's RBAC:
- the shipped ClusterRole (rbac/clusterrole.yaml) is all the `sandbox-operator`
  user may do on resources (beyond the self-reviews every user has), and every
  command passes as that user, dry runs included;
- without any single rule (one verb on one resource) the command that needs it
  fails with one line naming the verb and the resource (exit 5), changing nothing,
  but for the three evacuate can do without: watching pods (it polls), watching
  PodDisruptionBudgets (a refused pod waits its backoff only) and creating events (its
  audit trail: one warning, the run otherwise unchanged);
- evacuate's events are written with the shipped role, and dry runs write none;
- --as / --as-group (and the kubeconfig's as / as-groups) impersonate, sending
  every group."""

import json
import re
from pathlib import Path

import pytest
import yaml
from plugin import REPO
from sandbox_helpers import GPU_A, GPU_B, GPU_NODES, owner_kind, wait_until

ROLE_FILE = Path(REPO) / "rbac" / "clusterrole.yaml"
OPERATOR = "gpuisolate-operator"
SELF_REVIEWS = {("authorization.k8s.io", "selfsubjectaccessreviews", "create"),
                ("authorization.k8s.io", "selfsubjectrulesreviews", "create"),
                ("authentication.k8s.io", "selfsubjectreviews", "create")}
EVACUATE_A = ["evacuate", GPU_A, "--delete-emptydir-data", "--timeout", "2m"]
# (verb, group, resource) removed -> the command that needs it, and whether the GPU taint is set first
NEEDS = {
    ("list", "", "nodes"): (["status"], False),
    ("get", "", "nodes"): (["taint", GPU_A], False),
    ("patch", "", "nodes"): (["taint", GPU_A, "--dry-run=server"], False),
    ("list", "", "pods"): (["taint", GPU_A], False),
    ("get", "", "pods"): (EVACUATE_A, True),
    ("watch", "", "pods"): (EVACUATE_A, True),
    ("create", "", "pods/eviction"): (EVACUATE_A + ["--dry-run=server"], True),
    ("create", "", "events"): (EVACUATE_A, True),
    ("list", "policy", "poddisruptionbudgets"): (["status"], False),
    ("watch", "policy", "poddisruptionbudgets"): (EVACUATE_A, True),
    ("get", "apps", "daemonsets"): (["status"], False),
    # The landing check's reads (optional, as watch is): GPU B holds the seed's OSD on a claim, and
    # movers of ReplicaSets and a StatefulSet; LANDING_OWNERS puts a Job's and an RC's pods on GPU A.
    ("get", "", "persistentvolumeclaims"): (["status", GPU_B], False),
    ("get", "", "persistentvolumes"): (["status", GPU_B], False),
    ("get", "apps", "replicasets"): (["status", GPU_B], False),
    ("get", "apps", "statefulsets"): (["status", GPU_B], False),
    ("get", "", "replicationcontrollers"): (["status", GPU_A], False),
    ("get", "batch", "jobs"): (["status", GPU_A], False),
}
LANDING_LEFT_OUT = {"persistentvolumeclaims": "volumes", "persistentvolumes": "volumes",
                    "replicasets": "controllers' templates", "statefulsets": "controllers' templates",
                    "replicationcontrollers": "controllers' templates", "jobs": "controllers' templates"}


def shipped_rules():
    return yaml.safe_load(ROLE_FILE.read_text())["rules"]


def expand(rules):
    return {(group, resource, verb) for rule in rules for group in rule.get("apiGroups", [""])
            for resource in rule["resources"] for verb in rule["verbs"]}


def apply(sandbox, *objects):
    sandbox.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                           "items": list(objects)}))


def role(name, rules):
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name}, "rules": rules}


def binding(name, role_name, kind, subject):
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": subject}]}


def can_i(sandbox, verb, resource, *impersonate):
    result = sandbox.kubectl("auth", "can-i", verb, resource, *impersonate, check=False)
    return result.stdout.strip() == "yes"


def state(sandbox):
    nodes = {n["metadata"]["name"]: n["metadata"]["resourceVersion"]
             for n in sandbox.get_json("nodes")["items"]}
    return nodes, sorted(p["metadata"]["uid"] for p in sandbox.pods())


def test_the_shipped_role_is_all_the_operator_may_do(seed):
    in_cluster = seed.get_json("clusterrole", OPERATOR)
    assert expand(in_cluster["rules"]) == expand(shipped_rules())
    bindings = seed.get_json("clusterrolebindings")["items"] + seed.get_json("rolebindings", "-A")["items"]
    naming = [b for b in bindings if any(s.get("kind") == "User" and s.get("name") == OPERATOR
                                         for s in b.get("subjects") or ())]
    assert [(b["kind"], b["roleRef"]["name"]) for b in naming] == [("ClusterRoleBinding", OPERATOR)]
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
              "spec": {"namespace": "kommander"}}
    answer = json.loads(seed.kubectl("create", "--validate=false", "-o", "json", "-f", "-",
                                     context="sandbox-operator", input=json.dumps(review)).stdout)
    assert answer["status"].get("incomplete") is not True
    assert expand(answer["status"]["resourceRules"]) == expand(shipped_rules()) | SELF_REVIEWS


def audit_events(sandbox):
    """The uids of the events evacuate wrote (source.component kubectl-gpuisolate), anywhere."""
    return {e["metadata"]["uid"] for e in sandbox.get_json("events", "-A")["items"]
            if (e.get("source") or {}).get("component") == "kubectl-gpuisolate"}


@pytest.mark.window
def test_every_command_passes_as_the_operator(gpuisolate, clean):
    older = audit_events(clean)
    on_a = {p["metadata"]["uid"]: p for p in clean.pods_on(GPU_A)}
    runs = [(["status"], 0), (["status", "-o", "json"], 0), (["taint", "--dry-run=client"], 0),
            (["taint", "--dry-run=server"], 0), (["taint"], 0), (["untaint", "--dry-run=server"], 0),
            (["untaint"], 0),
            (["evacuate", "--taint-first", "--delete-emptydir-data", "--dry-run=client"], 0),
            (["evacuate", "--taint-first", "--delete-emptydir-data", "--dry-run=server"], 10),  # nai-db's PDB
            (["evacuate", "--taint-first", "--dry-run=server"], 9),                           # emptyDir gate
            (["taint"], 0), (EVACUATE_A, 0)]
    for args, code in runs:
        result = gpuisolate("--context", "sandbox-operator", *args)
        assert result.returncode == code, (args, result.stderr)
        assert "forbidden" not in result.stderr and "cannot watch" not in result.stderr, (args, result.stderr)
        assert "Kubernetes event" not in result.stderr, (args, result.stderr)
        if args == ["taint"] and audit_events(clean) != older:   # after the dry runs (and the rest)
            pytest.fail("events were written before the last evacuate, which alone may write them")
    written = [e for e in clean.get_json("events", "-A")["items"]
               if (e.get("source") or {}).get("component") == "kubectl-gpuisolate"
               and e["metadata"]["uid"] not in older]
    evicted = {e["involvedObject"]["uid"] for e in written if e["reason"] == "GpuIsolateEvicted"}
    assert evicted and evicted <= set(on_a), sorted(e["involvedObject"]["name"] for e in written)
    assert not evicted & {p["metadata"]["uid"] for p in clean.pods_on(GPU_A)}
    assert "GpuIsolateLeftInPlace" in {e["reason"] for e in written}      # the inference pod
    assert all(owner_kind(p) in ("DaemonSet", "Job") or p["metadata"]["name"].startswith("llama32")
               for p in clean.pods_on(GPU_A)), [p["metadata"]["name"] for p in clean.pods_on(GPU_A)]


@pytest.mark.parametrize("verb,group,resource", sorted(NEEDS), ids=[f"{v}-{r}" for v, _, r in sorted(NEEDS)])
def test_without_one_rule_the_command_fails_naming_it(gpuisolate, clean, rbac, request, verb, group,
                                                      resource):
    assert (group, resource, verb) in expand(shipped_rules())
    user = f"gpuisolate-e2e-without-{verb}-{resource.replace('/', '-')}"
    rules = [x for r in shipped_rules() for x in without(r, verb, group, resource)]
    rbac(role(user, [r for r in rules if r["verbs"]]), binding(user, user, "User", user))
    other = "nodes" if resource != "nodes" else "pods"
    wait_until("the binding to take effect", lambda: can_i(clean, "list", other, "--as", user))
    args, taint_first = NEEDS[(verb, group, resource)]
    if resource in ("replicationcontrollers", "jobs"):
        request.addfinalizer(landing_owners(clean))
    if taint_first:
        assert gpuisolate("taint").returncode == 0
    before = state(clean)
    result = gpuisolate("--context", "sandbox-admin", "--as", user, *args)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    if resource == "poddisruptionbudgets" and verb == "watch":   # optional and silent: backoff only
        assert result.returncode == 0 and errors == [], result.stderr
        assert "evicted pod" in result.stderr and state(clean) != before
        return
    if verb == "watch":       # optional: evacuate says so and polls instead
        assert result.returncode == 0, result.stderr
        assert f"node/{GPU_A}: cannot watch pods (HTTP 403); polling every 1s instead" in result.stderr
        return
    if resource == "events":  # best effort: one warning for the run, which goes on unchanged
        assert result.returncode == 0 and errors == [], result.stderr
        warnings = [line for line in result.stderr.splitlines() if "Kubernetes event" in line]
        assert len(warnings) == 1, result.stderr
        assert warnings[0].startswith("Warning: could not write ")
        assert f'User "{user}" cannot create resource "events"' in warnings[0]
        assert "evicted pod" in result.stderr and state(clean) != before
        return
    if resource in LANDING_LEFT_OUT:   # optional: the landing check says what it leaves out, once
        assert_landing_left_out(result, user, resource, LANDING_LEFT_OUT[resource], errors)
        assert state(clean) == before
        return
    assert result.returncode == 5, result.stderr
    assert len(errors) == 1 and result.stderr.strip().splitlines()[-1] == errors[0], result.stderr
    assert f'cannot {verb} resource "{resource}"' in errors[0]
    assert "Traceback" not in result.stderr and "evicting pod" not in result.stderr
    assert state(clean) == before


def without(rule, verb, group, resource):
    """The rule less one verb on one resource (its other resources keep every verb)."""
    if not (verb in rule["verbs"] and resource in rule["resources"] and group in rule["apiGroups"]):
        return [rule]
    others = [r for r in rule["resources"] if r != resource]
    return ([dict(rule, resources=others)] if others else []) + [
        dict(rule, resources=[resource], verbs=[v for v in rule["verbs"] if v != verb])]


def landing_owners(sandbox, ns="e2e-landing-owners"):
    """A ReplicationController's pod Running on GPU A, and a Job's pod bound there and kept active
    (kwok completes a Job's pod once it runs: this one gets a pod IP first, so kwok leaves it Pending).
    Returns what deletes the namespace and waits until it is gone (no pod of it left to
    change a later test's view)."""
    sandbox.kubectl("create", "namespace", ns)
    spec = {"containers": [{"name": "main", "image": "busybox"}], "terminationGracePeriodSeconds": 0}
    apply(sandbox, {"apiVersion": "v1", "kind": "ReplicationController",
                    "metadata": {"name": "rc", "namespace": ns},
                    "spec": {"replicas": 1, "selector": {"app": "rc"}, "template": {
                        "metadata": {"labels": {"app": "rc"}},
                        "spec": dict(spec, nodeSelector={"kubernetes.io/hostname": GPU_A})}}},
          {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job", "namespace": ns},
           "spec": {"template": {"spec": dict(spec, restartPolicy="Never",
                                              nodeSelector={"gpuisolate.example/nowhere": "x"})}}})
    job_pod = wait_until("the Job's pod", lambda: sandbox.pods("-n", ns, "-l", "job-name=job"))[0]
    job_pod = job_pod["metadata"]["name"]
    sandbox.kubectl("patch", "pod", "-n", ns, job_pod, "--subresource=status", "--type=merge", "-p",
                    json.dumps({"status": {"podIP": "10.200.0.1", "podIPs": [{"ip": "10.200.0.1"}]}}))
    sandbox.kubectl("create", "--raw", f"/api/v1/namespaces/{ns}/pods/{job_pod}/binding", "-f", "-",
                    input=json.dumps({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": job_pod},
                                      "target": {"apiVersion": "v1", "kind": "Node", "name": GPU_A}}))
    wait_until("both pods on GPU A", lambda: sorted(
        (p["metadata"]["labels"].get("app") or "job", p["status"].get("phase"))
        for p in sandbox.pods("-n", ns) if p["spec"].get("nodeName") == GPU_A) == [("job", "Pending"),
                                                                                    ("rc", "Running")])
    return lambda: sandbox.kubectl("delete", "namespace", ns, "--timeout=180s", timeout=240)


def assert_landing_left_out(result, user, resource, what, errors):
    assert result.returncode == 0, result.stderr
    assert errors == [] and "Traceback" not in result.stderr
    warnings = [line for line in result.stderr.splitlines() if "the landing check leaves" in line]
    assert len(warnings) == 1, result.stderr
    group = next(g for _, g, r in NEEDS if r == resource)
    assert re.fullmatch(
        rf'Warning: the landing check leaves {what} out: {resource}{"." + group if group else ""} "[^"]+" '
        rf'is forbidden: User "{user}" cannot get resource "{resource}" in API group "{group}" '
        r'(in the namespace "[^"]+"|at the cluster scope) \(while reading \w+ [^;]+; '
        r'grant that permission or use another context\)', warnings[0]), warnings[0]
    assert "node/" in result.stdout and " would move" in result.stdout     # the plan is complete


# Rules whose removal only a DRA cluster shows (Kubernetes 1.34+): covered where claims exist.
DRA_NEEDS = {("get", "resource.k8s.io", "resourceclaims"):
             "test_dra.py::test_without_get_resourceclaims_claim_pods_are_kept_with_one_warning",
             # Not DRA, but likewise shown only where its objects are: pods naming a RuntimeClass.
             ("list", "node.k8s.io", "runtimeclasses"):
             "test_real_workloads.py::test_without_list_runtimeclasses_a_class_is_judged_by_its_name"}


# The guard's rules (optional: only `guard` and the guard line of `status` use them).
ADMISSION = "admissionregistration.k8s.io"
WITHOUT_A_GUARD_RULE = "test_guard.py::test_without_one_of_the_guards_rules_it_fails_naming_the_verb"
GUARD_NEEDS = {
    **{(verb, ADMISSION, plural): WITHOUT_A_GUARD_RULE
       for verb in ("get", "create", "patch", "delete", "list")
       for plural in ("validatingadmissionpolicies", "validatingadmissionpolicybindings")},
    ("list", "", "namespaces"):
        "test_guard.py::test_without_list_namespaces_the_usual_operator_namespaces_are_exempted",
}


def test_every_rule_of_the_role_is_covered():
    assert {(g, r, v) for v, g, r in [*NEEDS, *DRA_NEEDS, *GUARD_NEEDS]} == expand(shipped_rules())
    for where in {**DRA_NEEDS, **GUARD_NEEDS}.values():
        path, name = where.split("::")
        assert f"def {name}(" in (Path(__file__).parent / path).read_text(), where


def test_impersonation_sends_every_group(gpuisolate, sandbox, rbac, tmp_path):
    """The shipped rules split between two groups: status needs both, so both must be sent."""
    rules = shipped_rules()
    first = [r for r in rules if r["apiGroups"] == [""]]
    second = [r for r in rules if r["apiGroups"] != [""]]
    rbac(role("gpuisolate-e2e-g1", first), role("gpuisolate-e2e-g2", second),
         binding("gpuisolate-e2e-g1", "gpuisolate-e2e-g1", "Group", "gpuisolate-e2e-g1"),
         binding("gpuisolate-e2e-g2", "gpuisolate-e2e-g2", "Group", "gpuisolate-e2e-g2"))
    who = ["--as", "gpuisolate-e2e-someone"]
    wait_until("the group bindings to take effect", lambda: can_i(
        sandbox, "list", "poddisruptionbudgets", *who, "--as-group", "gpuisolate-e2e-g2") and can_i(
        sandbox, "list", "nodes", *who, "--as-group", "gpuisolate-e2e-g1"))
    both = ["--as-group", "gpuisolate-e2e-g1", "--as-group", "gpuisolate-e2e-g2"]
    for groups in (both, both[2:] + both[:2]):
        result = gpuisolate("status", *who, *groups)
        assert result.returncode == 0, (groups, result.stderr)
        assert GPU_NODES[0] in result.stdout
    # With one group, status lacks the other group's rules (which of them it meets first may vary).
    for groups, missing in ((both[:2], ('list resource "poddisruptionbudgets"', 'get resource "daemonsets"')),
                            (both[2:], ('list resource "nodes"',)), ([], ('list resource "nodes"',))):
        result = gpuisolate("status", *who, *groups)
        assert result.returncode == 5, (groups, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1
        assert "gpuisolate-e2e-someone" in result.stderr, result.stderr
        assert any(f"cannot {m}" in result.stderr for m in missing), (groups, result.stderr)
    config = json.loads(sandbox.kubectl("config", "view", "--raw", "--minify", "-o", "json").stdout)
    config["users"][0]["user"].update({"as": "gpuisolate-e2e-someone",
                                       "as-groups": ["gpuisolate-e2e-g1", "gpuisolate-e2e-g2"]})
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(config))
    result = gpuisolate("status", "--kubeconfig", str(path))
    assert result.returncode == 0, result.stderr
    only_one = gpuisolate("status", "--kubeconfig", str(path), "--as", "gpuisolate-e2e-someone",
                          "--as-group", "gpuisolate-e2e-g1")       # flags replace the kubeconfig's
    assert only_one.returncode == 5, only_one.stderr
    assert '"poddisruptionbudgets"' in only_one.stderr or '"daemonsets"' in only_one.stderr


def test_the_operator_acts_as_itself_through_impersonation(gpuisolate, clean):
    for args in (["status"], ["taint", "--dry-run=server"], ["taint"], ["untaint"]):
        result = gpuisolate("--context", "sandbox-admin", "--as", OPERATOR, *args)
        assert result.returncode == 0, (args, result.stderr)
