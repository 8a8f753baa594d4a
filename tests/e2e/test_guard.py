"""The guard (core/guard.py, commands/guard.py) against the real API server, on 1.33 and (all but
the permission tests, which do not depend on the server's release) in the window subset on 1.31 and
1.37: the server's ValidatingAdmissionPolicy plugin is the oracle.

- Every pod shape of the planner's unit cases, created with a server-side dry run under a Deny
  guard, is admitted or rejected (with the policy's message) exactly as the Python twin
  ``guard.rejects`` says, with its nodeName and without it; the server type-checks the CEL
  against the pod schema without a warning.
- With Deny, a tolerate-all Deployment's pods are rejected (its ReplicaSet says so with the
  policy's message), a pod on a GPU node by nodeName is rejected, a GPU pod and a tolerate-all
  DaemonSet's pods are admitted; with Warn, kubectl prints the warning and creates the pod.
- Written twice, nothing changes (server-side apply under the plugin's field manager); status
  reports the mode and the running pods it would reject; --remove leaves no object of the guard
  behind and nothing else touched; the shipped role can do all of it, and without one of the
  guard's rules the command fails in one line naming the verb.
"""
import copy
import json
import sys
from pathlib import Path

import pytest
import yaml
from sandbox_helpers import GPU_A, wait_until
from test_least_privilege import ROLE_FILE, binding, can_i, role, without

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # tests/: the unit cases
from unit.core.test_planner import DECISION_CASES  # noqa: E402

from kubectl_gpuisolate.core import gpu, guard  # noqa: E402
from kubectl_gpuisolate.core.taints import parse_taint  # noqa: E402

KINDS = "validatingadmissionpolicies,validatingadmissionpolicybindings"
TAINT = parse_taint("nvidia.com/gpu=true:NoSchedule")
DENIED = "ValidatingAdmissionPolicy 'gpuisolate-guard' with binding 'gpuisolate-guard' denied request: "
TOLERATES_MESSAGE, NODE_MESSAGE = guard.messages(TAINT)


def guard_objects(sandbox):
    return sandbox.kubectl("get", KINDS, "-l", guard.LABEL_SELECTOR, "-o", "name").stdout.split()


@pytest.fixture
def guarded(gpuisolate, sandbox):
    """``write(*args)`` runs ``guard ARGS`` and waits until the API server judges by the result;
    the guard is removed afterwards (a reset leaves cluster-scoped objects)."""
    def write(*args, until=None):
        result = gpuisolate("guard", *args)
        assert result.returncode == 0, result.stderr
        if until is not None:
            wait_until(f"the API server to judge by the guard ({until})",
                       lambda: probe(sandbox) == until, timeout=30)
        return result
    yield write
    gpuisolate("guard", "--remove")
    sandbox.kubectl("delete", KINDS, "-l", guard.LABEL_SELECTOR, "--ignore-not-found")
    # The server judges by its cache of the policies: the next test must not meet this one's.
    wait_until("the API server to forget the guard", lambda: probe(sandbox) == ADMITTED, timeout=30)


DENY, WARN, ADMITTED = "denied", "warned", "admitted"


def probe(sandbox):
    """What the server does now with a tolerate-all pod in the default namespace (a dry run)."""
    the_pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "namespace": "default"},
               "spec": {"tolerations": [{"operator": "Exists"}], "containers": [{"name": "c", "image": "x"}]}}
    result = sandbox.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(the_pod), check=False)
    if result.returncode != 0 and DENIED in result.stderr:
        return DENY
    return WARN if "Validation failed for ValidatingAdmissionPolicy 'gpuisolate-guard'" in result.stderr \
        else ADMITTED


# -- the oracle: every planner shape ---------------------------------------------------------------
def creatable(the_pod, name, namespace, *, node_name, with_claims):
    """The case's pod as a user would create it: no server-set fields, limits beside extended
    requests (the API requires them), and claims only where the server serves DRA (elsewhere it
    drops the field, and the twin would judge a pod the server never saw)."""
    made = copy.deepcopy(the_pod)
    meta = made["metadata"]
    for key in ("uid", "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds",
                "creationTimestamp"):
        meta.pop(key, None)
    meta.update(name=name, namespace=namespace)
    made.pop("status", None)
    spec = made["spec"]
    spec.pop("ephemeralContainers", None)      # the API adds them to a running pod only
    spec.pop("nodeName", None)
    if node_name:
        spec["nodeName"] = node_name
    if not with_claims:
        spec.pop("resourceClaims", None)
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        container.setdefault("image", "busybox")
        resources = container.get("resources") or {}
        if not with_claims:
            resources.pop("claims", None)
        extended = {k: v for k, v in (resources.get("requests") or {}).items() if gpu.is_gpu_resource(k)}
        if extended:
            resources.setdefault("limits", {}).update(extended)
    return dict(made, apiVersion="v1", kind="Pod")


def server_verdicts(sandbox, pods):
    """{pod name: None (admitted), TOLERATES or NAMES_NODE}, from one `kubectl create --dry-run=server`."""
    result = sandbox.kubectl("create", "--dry-run=server", "-f", "-", check=False,
                             input=json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}))
    found = {line.split()[0].split("/", 1)[1]: None for line in result.stdout.splitlines()
             if line.endswith("created (server dry run)")}
    other = []
    for line in result.stderr.splitlines():
        if DENIED not in line:
            other.append(line)
            continue
        name = line.split('pods "', 1)[1].split('"', 1)[0]
        message = line.split(DENIED, 1)[1]
        reasons = {TOLERATES_MESSAGE: guard.TOLERATES, NODE_MESSAGE: guard.NAMES_NODE}
        found[name] = reasons.get(message, message)
    assert not other, other        # every shape is a valid pod: only the guard may refuse one
    return found


@pytest.fixture
def runtime_classes(sandbox):
    """The RuntimeClasses the cases' pods name (the RuntimeClass admission plugin refuses a pod
    naming a missing one), with the handlers the cases give them."""
    names = {case.values[0]["spec"].get("runtimeClassName") for case in DECISION_CASES} - {None}
    handlers = {name: handler for case in DECISION_CASES
                for name, handler in (case.values[1].get("runtime_classes") or {}).items()}
    sandbox.apply(*[{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
                     "handler": handlers.get(name, name)} for name in sorted(names)])
    yield sorted(names)
    sandbox.kubectl("delete", "runtimeclass", *sorted(names), "--ignore-not-found")


def is_mirror(the_pod):
    return "kubernetes.io/config.mirror" in (the_pod["metadata"].get("annotations") or {})


@pytest.mark.window
def test_the_api_server_judges_every_planner_shape_as_the_twin_does(sandbox, guarded, namespace,
                                                                    runtime_classes):
    guarded("--mode", "Deny", until=DENY)
    policy = sandbox.get_json("validatingadmissionpolicy", guard.NAME)
    wait_until("the type check", lambda: sandbox.get_json("validatingadmissionpolicy", guard.NAME)
               .get("status", {}).get("observedGeneration") == policy["metadata"]["generation"])
    checked = sandbox.get_json("validatingadmissionpolicy", guard.NAME)["status"]
    assert not (checked.get("typeChecking") or {}).get("expressionWarnings"), checked
    classes = sandbox.get_json("runtimeclasses")["items"]
    spec = guard.GuardSpec(TAINT, tuple(n["metadata"]["name"] for n in
                                        gpu.gpu_nodes(sandbox.get_json("nodes")["items"])),
                           gpu_runtime_classes=tuple(sorted(c["metadata"]["name"] for c in classes
                                                            if "nvidia" in c["handler"])),
                           exempt_namespaces=tuple(guard.exempt_of(sandbox.get_json(
                               "validatingadmissionpolicybinding", guard.NAME))))
    assert spec.gpu_runtime_classes == ("gpu", "nvidia")       # the guard read them
    with_claims = sandbox.minor_at_least("1.34")
    pods = [creatable(case.values[0], f"c{index}-{variant}", namespace, node_name=node,
                      with_claims=with_claims)
            for index, case in enumerate(DECISION_CASES)
            for variant, node in (("on-gpu", GPU_A), ("unbound", None))
            if node or not is_mirror(case.values[0])]     # the API wants a mirror pod's node
    expected = {p["metadata"]["name"]: guard.rejects(p, spec) for p in pods}
    got = server_verdicts(sandbox, pods)
    assert got == expected
    # Both validations and admission were reached, not only one of them.
    assert set(expected.values()) == {None, guard.TOLERATES, guard.NAMES_NODE}


# -- what an administrator sees ---------------------------------------------------------------------
def tolerate_all(kind, name, namespace):
    template = {"metadata": {"labels": {"app": name}},
                "spec": {"tolerations": [{"operator": "Exists"}], "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "main", "image": "busybox"}]}}
    spec = {"selector": {"matchLabels": {"app": name}}, "template": template}
    if kind == "Deployment":
        spec["replicas"] = 1
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": namespace},
            "spec": spec}


def plain_pod(name, namespace, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec}}


@pytest.mark.window
def test_deny_rejects_leaks_and_admits_gpu_and_daemonset_pods(sandbox, gpuisolate, guarded, namespace):
    leak = plain_pod("leak-before", namespace, tolerations=[{"operator": "Exists"}],
                     nodeSelector={"kubernetes.io/hostname": GPU_A})
    sandbox.apply(leak)                       # running on GPU A before the guard: status names it
    wait_until("the leak to run on GPU A", lambda: [p for p in sandbox.pods_on(GPU_A)
                                                    if p["metadata"]["name"] == "leak-before"])
    result = guarded("--mode", "Deny", until=DENY)
    assert result.stdout.splitlines() == [
        "validatingadmissionpolicy.admissionregistration.k8s.io/gpuisolate-guard created",
        "validatingadmissionpolicybinding.admissionregistration.k8s.io/gpuisolate-guard created"]
    assert "the API server will reject new pods" in result.stderr

    sandbox.apply(tolerate_all("Deployment", "chart", namespace),
                  tolerate_all("DaemonSet", "agent", namespace))
    rs = wait_until("the ReplicaSet to report the refusal", lambda: [
        c for r in sandbox.get_json("replicasets", "-n", namespace)["items"]
        for c in (r.get("status") or {}).get("conditions") or () if c["type"] == "ReplicaFailure"])
    assert TOLERATES_MESSAGE in rs[0]["message"], rs
    assert not [p for p in sandbox.pods("-n", namespace) if p["metadata"]["name"].startswith("chart-")]
    wait_until("the DaemonSet's pods", lambda: [p for p in sandbox.pods("-n", namespace)
                                               if p["metadata"]["name"].startswith("agent-")])

    gpu_pod = plain_pod("gpu", namespace, tolerations=[{"operator": "Exists"}])
    gpu_pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    assert sandbox.kubectl("create", "-f", "-", input=json.dumps(gpu_pod), check=False).returncode == 0
    pinned = sandbox.kubectl("create", "-f", "-", check=False,
                             input=json.dumps(plain_pod("pinned", namespace, nodeName=GPU_A)))
    assert pinned.returncode == 1 and DENIED + NODE_MESSAGE in pinned.stderr, pinned.stderr

    status = gpuisolate("status", "-o", "json")
    assert status.returncode == 0, status.stderr
    state = json.loads(status.stdout)["guard"]
    assert state["mode"] == "Deny" and f"{namespace}/leak-before" in state["wouldReject"], state
    text = gpuisolate("status").stdout
    assert "\nguard: Deny (exempt namespaces: kube-system)" in text and f"{namespace}/leak-before" in text


@pytest.mark.window
def test_warn_lets_the_pod_in_with_kubectls_warning(sandbox, guarded, namespace):
    guarded(until=WARN)            # Warn, the default
    created = sandbox.kubectl("create", "-f", "-", check=False, input=json.dumps(
        plain_pod("leak", namespace, tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}])))
    assert created.returncode == 0, created.stderr
    warning = f"Warning: Validation failed for {DENIED.split(' denied')[0]}: {TOLERATES_MESSAGE}"
    assert warning in created.stderr, created.stderr


@pytest.mark.window
def test_written_twice_nothing_changes_and_remove_deletes_only_the_guard(sandbox, gpuisolate, guarded):
    other = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
             "metadata": {"name": "e2e-someone-elses", "labels": {"app.kubernetes.io/component": "guard"}},
             "spec": {"matchConstraints": {"resourceRules": [{
                 "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]},
                      "validations": [{"expression": "true"}]}}
    sandbox.apply(other)
    try:
        guarded("--mode", "Audit")
        generations = sandbox.kubectl("get", KINDS, "-l", guard.LABEL_SELECTOR, "-o",
                                   "jsonpath={.items[*].metadata.generation}").stdout
        again = guarded("--mode", "Audit")
        assert again.stdout.count(" unchanged\n") == 2, again.stdout
        assert sandbox.kubectl("get", KINDS, "-l", guard.LABEL_SELECTOR, "-o",
                               "jsonpath={.items[*].metadata.generation}").stdout == generations
        written = sandbox.get_json("validatingadmissionpolicy", guard.NAME, "--show-managed-fields")
        managers = {(m["manager"], m["operation"]) for m in written["metadata"]["managedFields"]
                    if m.get("subresource") != "status"}          # the type checker's
        assert managers == {("kubectl-gpuisolate", "Apply")}, managers
        printed = gpuisolate("guard", "--dry-run=client", "-o", "yaml")
        assert printed.returncode == 0 and "unchanged" not in printed.stdout
        assert [o["kind"] for o in yaml.safe_load(printed.stdout)["items"]] == [guard.POLICY, guard.BINDING]
        removed = gpuisolate("guard", "--remove")
        assert removed.returncode == 0, removed.stderr
        assert removed.stdout.splitlines() == [
            "validatingadmissionpolicybinding.admissionregistration.k8s.io/gpuisolate-guard deleted",
            "validatingadmissionpolicy.admissionregistration.k8s.io/gpuisolate-guard deleted"]
        assert guard_objects(sandbox) == []
        assert sandbox.get_json("validatingadmissionpolicy", "e2e-someone-elses")
        assert gpuisolate("guard", "--remove").stderr.startswith("no guard found")
    finally:
        sandbox.kubectl("delete", "validatingadmissionpolicy", "e2e-someone-elses", "--ignore-not-found")


@pytest.mark.window
def test_bad_input_is_one_line(gpuisolate, guarded, sandbox):
    bad = gpuisolate("guard", "--mode", "Block")
    assert bad.returncode == 2 and bad.stderr == "error: invalid --mode 'Block': use Warn, Audit, Deny\n"
    result = guarded("--exempt-namespace", "e2e-not-there", "--exempt-namespace", "kube-system")
    assert "Warning: namespace e2e-not-there does not exist: exempted all the same\n" in result.stderr
    assert guard.exempt_of(sandbox.get_json("validatingadmissionpolicybinding", guard.NAME)) == (
        "e2e-not-there", "kube-system")


def test_the_shipped_role_may_guard(gpuisolate, guarded, sandbox):
    as_operator = ("--context", "sandbox-operator")
    assert gpuisolate(*as_operator, "guard").returncode == 0
    assert json.loads(gpuisolate(*as_operator, "status", "-o", "json").stdout)["guard"]["mode"] == "Warn"
    removed = gpuisolate(*as_operator, "guard", "--remove")
    assert removed.returncode == 0 and guard_objects(sandbox) == [], removed.stderr


GUARD_RULES = [(verb, plural) for verb in ("get", "create", "patch", "list", "delete")
               for plural in ("validatingadmissionpolicies", "validatingadmissionpolicybindings")]


@pytest.mark.parametrize("verb, resource", GUARD_RULES, ids=[f"{v}-{r}" for v, r in GUARD_RULES])
def test_without_one_of_the_guards_rules_it_fails_naming_the_verb(gpuisolate, guarded, sandbox, rbac,
                                                                   verb, resource):
    user = f"gpuisolate-e2e-guard-without-{verb}-{resource[:24]}"
    rules = [x for r in yaml.safe_load(ROLE_FILE.read_text())["rules"]
             for x in without(r, verb, "admissionregistration.k8s.io", resource)]
    rbac(role(user, [r for r in rules if r["verbs"]]), binding(user, user, "User", user))
    wait_until("the binding to take effect", lambda: can_i(sandbox, "list", "nodes", "--as", user))
    args = ["guard", "--remove"] if verb in ("list", "delete") else ["guard"]
    if args[-1] == "--remove":
        guarded()                             # something to remove
    before = sandbox.kubectl("get", KINDS, "-l", guard.LABEL_SELECTOR, "-o", "yaml").stdout
    result = gpuisolate("--context", "sandbox-admin", "--as", user, *args)
    assert result.returncode == 5, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: cannot {verb} {resource}.admissionregistration.k8s.io: the guard needs it "
                      "(rbac/clusterrole.yaml, the optional guard rule)"], result.stderr
    assert sandbox.kubectl("get", KINDS, "-l", guard.LABEL_SELECTOR, "-o", "yaml").stdout == before


def test_without_the_guards_rules_status_says_unknown(gpuisolate, sandbox, rbac):
    user = "gpuisolate-e2e-no-guard-rules"
    rules = [r for r in yaml.safe_load(ROLE_FILE.read_text())["rules"]
             if r["apiGroups"] != ["admissionregistration.k8s.io"]]
    rbac(role(user, rules), binding(user, user, "User", user))
    wait_until("the binding to take effect", lambda: can_i(sandbox, "list", "nodes", "--as", user))
    result = gpuisolate("--context", "sandbox-admin", "--as", user, "status")
    assert result.returncode == 0, result.stderr
    assert "\nguard: unknown (no permission)\n" in result.stdout


def test_without_list_namespaces_the_usual_operator_namespaces_are_exempted(gpuisolate, guarded, sandbox,
                                                                            rbac):
    user = "gpuisolate-e2e-guard-without-list-namespaces"
    rules = [x for r in yaml.safe_load(ROLE_FILE.read_text())["rules"]
             for x in without(r, "list", "", "namespaces")]
    rbac(role(user, [r for r in rules if r["verbs"]]), binding(user, user, "User", user))
    wait_until("the binding to take effect", lambda: can_i(sandbox, "list", "nodes", "--as", user))
    result = gpuisolate("--context", "sandbox-admin", "--as", user, "guard")
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
    assert len(warnings) == 1 and "namespaces could not be listed" in warnings[0], result.stderr
    assert guard.exempt_of(sandbox.get_json("validatingadmissionpolicybinding", guard.NAME)) == tuple(
        sorted(guard.ALWAYS_EXEMPT + guard.GPU_OPERATOR_NAMESPACES))
