"""``guard`` (commands/guard.py) on a fake cluster: what it writes, in which order, what a dry run
and -o leave alone, what it removes, and its one-line errors."""

import pytest
import yaml

from kubectl_gpuisolate.core import guard
from kubectl_gpuisolate.errors import AuthError, UsageError, api_error

from ..evict_fakes import RBAC_403, FakeCluster
from ..factories import GPU_A, GPU_B, gpu_node, node
from .helpers import run_command

POLICY_LINE = "validatingadmissionpolicy.admissionregistration.k8s.io/gpuisolate-guard"
BINDING_LINE = "validatingadmissionpolicybinding.admissionregistration.k8s.io/gpuisolate-guard"


def cluster(**kw):
    fake = FakeCluster([gpu_node(GPU_A), gpu_node(GPU_B), node("cpu-1")], [], **kw)
    fake.namespaces = ["default", "kube-system", "gpu-operator", "monitoring"]
    return fake


def written(fake, kind):
    return fake.admission[(kind, guard.NAME)]


def test_it_writes_the_policy_then_its_binding_and_a_second_run_changes_nothing():
    fake = cluster(runtime_classes={"nvidia": "nvidia", "gvisor": "runsc", "gpu": "nvidia-cdi"})
    code, out, err = run_command(fake, "guard")
    assert code == 0
    assert out.splitlines() == [f"{POLICY_LINE} created", f"{BINDING_LINE} created"]
    assert [entry[:2] for entry in fake.log] == [("apply", guard.POLICY), ("apply", guard.BINDING)]
    assert err.startswith("guard: the API server will warn about new pods")
    binding = written(fake, guard.BINDING)
    assert binding["spec"]["validationActions"] == ["Warn"]
    assert guard.exempt_of(binding) == ("gpu-operator", "kube-system")
    uses = written(fake, guard.POLICY)["spec"]["variables"][0]["expression"]
    assert '["gpu", "nvidia"]' in uses and "gvisor" not in uses
    names = written(fake, guard.POLICY)["spec"]["variables"][2]["expression"]
    assert GPU_A in names and GPU_B in names and "cpu-1" not in names
    code, out, _ = run_command(fake, "guard")
    assert code == 0 and out.splitlines() == [f"{POLICY_LINE} unchanged", f"{BINDING_LINE} unchanged"]
    code, out, _ = run_command(fake, "guard", "--mode", "deny")
    assert out.splitlines() == [f"{POLICY_LINE} unchanged", f"{BINDING_LINE} configured"]
    assert written(fake, guard.BINDING)["spec"]["validationActions"] == ["Deny"]


@pytest.mark.parametrize("dry_run, suffix", [("client", " (dry run)"), ("server", " (server dry run)")])
def test_a_dry_run_writes_nothing(dry_run, suffix):
    fake = cluster()
    code, out, _ = run_command(fake, "guard", f"--dry-run={dry_run}")
    assert code == 0
    assert out.splitlines() == [f"{POLICY_LINE} created{suffix}", f"{BINDING_LINE} created{suffix}"]
    assert fake.admission == {}
    assert {entry[2] for entry in fake.log} == {dry_run}


def test_output_prints_the_objects_as_one_list_and_the_lines_on_stderr():
    fake = cluster()
    code, out, err = run_command(fake, "guard", "--dry-run=client", "-o", "yaml", "--mode", "Audit")
    document = yaml.safe_load(out)
    assert code == 0 and document["kind"] == "List"
    assert [o["kind"] for o in document["items"]] == [guard.POLICY, guard.BINDING]
    assert document["items"][1]["spec"]["validationActions"] == ["Audit"]
    assert f"{POLICY_LINE} created (dry run)" in err and fake.admission == {}


def test_exempt_namespaces_that_do_not_exist_are_warned_and_kept():
    fake = cluster()
    code, _, err = run_command(fake, "guard", "--exempt-namespace", "monitoring",
                               "--exempt-namespace", "later")
    assert code == 0
    assert "Warning: namespace later does not exist: exempted all the same" in err
    assert "monitoring does not" not in err
    assert guard.exempt_of(written(fake, guard.BINDING)) == (
        "gpu-operator", "kube-system", "later", "monitoring")


def test_without_the_namespace_list_the_usual_operator_namespaces_are_exempted():
    fake = cluster()
    fake.namespaces = RBAC_403
    code, _, err = run_command(fake, "guard")
    assert code == 0 and err.count("Warning:") == 1 and "namespaces could not be listed" in err
    assert guard.exempt_of(written(fake, guard.BINDING)) == (
        "gpu-operator", "kube-system", "nvidia-gpu-operator")


def test_without_runtime_classes_a_class_is_judged_by_its_name():
    fake = cluster(runtime_classes_error=RBAC_403)
    code, _, err = run_command(fake, "guard")
    assert code == 0 and "RuntimeClasses could not be read" in err


def test_no_gpu_node_is_warned():
    fake = FakeCluster([node("cpu-1")], [], workers=())
    code, _, err = run_command(fake, "guard", "--dry-run=client")
    assert code == 0 and "no GPU nodes found" in err


def test_an_old_server_is_refused_before_anything_is_read_or_written():
    fake = cluster()
    fake.version = "v1.29.4"
    with pytest.raises(UsageError, match="needs Kubernetes 1.30 or newer .* the server is v1.29.4"):
        run_command(fake, "guard")
    assert fake.log == []


@pytest.mark.parametrize("argv, missing", [
    (["guard"], ("create", "validatingadmissionpolicies")),
    (["guard"], ("patch", "validatingadmissionpolicybindings")),
    (["guard", "--remove"], ("delete", "validatingadmissionpolicies")),
    (["guard", "--remove"], ("list", "validatingadmissionpolicybindings")),
])
def test_a_missing_verb_is_named_before_any_write(argv, missing):
    fake = cluster()
    run_command(fake, "guard")
    before, fake.log = dict(fake.admission), []
    fake.permissions = {missing: False}
    with pytest.raises(AuthError) as raised:
        run_command(fake, *argv)
    assert str(raised.value) == (f"cannot {missing[0]} {missing[1]}.admissionregistration.k8s.io: the guard "
                                 "needs it (rbac/clusterrole.yaml, the optional guard rule)")
    assert raised.value.exit_code == 5
    assert fake.log == [] and fake.admission == before


def test_a_client_dry_run_asks_no_permission():
    fake = cluster()
    fake.permissions = {("create", "validatingadmissionpolicies"): False}
    assert run_command(fake, "guard", "--dry-run=client")[0] == 0


def test_remove_deletes_the_binding_then_the_policy_and_nothing_else():
    fake = cluster()
    run_command(fake, "guard")
    theirs = {"kind": guard.POLICY, "metadata": {"name": "theirs", "labels": {"team": "a"}}}
    fake.admission[(guard.POLICY, "theirs")] = theirs
    fake.log = []
    code, out, _ = run_command(fake, "guard", "--remove")
    assert code == 0 and out.splitlines() == [f"{BINDING_LINE} deleted", f"{POLICY_LINE} deleted"]
    assert [entry[:2] for entry in fake.log] == [("delete", guard.BINDING), ("delete", guard.POLICY)]
    assert list(fake.admission) == [(guard.POLICY, "theirs")]
    code, out, err = run_command(fake, "guard", "--remove")
    assert code == 0 and out == "" and err.startswith("no guard found")


def test_remove_with_a_dry_run_deletes_nothing():
    fake = cluster()
    run_command(fake, "guard")
    code, out, _ = run_command(fake, "guard", "--remove", "--dry-run=server")
    assert code == 0 and out.splitlines()[0] == f"{BINDING_LINE} deleted (server dry run)"
    assert len(fake.admission) == 2


@pytest.mark.parametrize("error, line", [
    (None, "guard: absent ('kubectl gpuisolate guard' keeps new leaks off the GPU nodes)"),
    (RBAC_403, "guard: unknown (no permission)"),
    (api_error("boom", status=500), "guard: unknown (HTTP 500)"),
])
def test_status_reports_the_guard(error, line):
    fake = cluster()
    fake.admission_error = error
    code, out, _ = run_command(fake, "status")
    assert code == 0 and out.rstrip("\n").splitlines()[-1] == line


def test_status_shows_the_mode_and_the_running_pods_it_would_reject():
    from ..factories import TOLERATE_ALL, pod

    fake = FakeCluster([gpu_node(GPU_A)], [pod("chart-1", "apps", tolerations=TOLERATE_ALL),
                                           pod("agent", "kube-system", tolerations=TOLERATE_ALL)])
    fake.namespaces = ["apps", "kube-system"]
    run_command(fake, "guard", "--mode", "Deny")
    _, out, _ = run_command(fake, "status")
    assert out.rstrip("\n").splitlines()[-1] == (
        "guard: Deny (exempt namespaces: kube-system); 1 running pod it would reject: apps/chart-1")
