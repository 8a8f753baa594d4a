"""The guard's objects, pinned whole (tests/unit/core/golden/guard.json): the policy's CEL and the
binding as tests/e2e/test_guard.py proves them against the API server.  A change to them fails
here, so that it is read, proved again end to end, and the file rewritten on purpose:
``GPUISOLATE_WRITE_GOLDEN=1 scripts/test tests/unit/core/test_guard_golden.py`` writes it (and
fails, so that a write never passes as a check).  And the small readers of a written guard
(``mode_of``, ``exempt_of``, ``check_server``), each on its edges."""

import json
import os
from pathlib import Path

import pytest

from kubectl_gpuisolate.core import guard
from kubectl_gpuisolate.core.taints import Taint
from kubectl_gpuisolate.errors import UsageError

GOLDEN = Path(__file__).parent / "golden" / "guard.json"
SPECS = {
    # The seed's taint, two GPU nodes, the GPU Operator's RuntimeClasses, Deny.
    "seed": guard.GuardSpec(Taint("nvidia.com/gpu", "true", "NoSchedule"), ("gpu-a", "gpu-b"),
                            ("nvidia", "nvidia-cdi"), ("kube-system", "gpu-operator", "kube-system"),
                            "Deny"),
    # No GPU node known, no RuntimeClass: the lists are empty and the defaults hold.  A key-only
    # NoExecute taint (GKE's) with a quote and a backslash, to pin the CEL string escapes.
    "bare": guard.GuardSpec(Taint('sku\\"x', "", "NoExecute")),
}


def written():
    return {name: guard.objects(spec) for name, spec in SPECS.items()}


def test_the_objects_are_the_ones_proved_end_to_end():
    if os.environ.get("GPUISOLATE_WRITE_GOLDEN"):
        GOLDEN.write_text(json.dumps(written(), indent=1, sort_keys=True) + "\n")
        pytest.fail(f"wrote {GOLDEN}: unset GPUISOLATE_WRITE_GOLDEN and run again")
    assert written() == json.loads(GOLDEN.read_text()), \
        "the guard's objects changed: prove them with tests/e2e/test_guard.py, then rewrite the file"


def test_the_golden_file_is_the_objects_themselves():
    golden = json.loads(GOLDEN.read_text())
    seed, bare = golden["seed"], golden["bare"]
    assert [o["kind"] for o in seed] == [guard.POLICY, guard.BINDING]
    assert seed[1]["spec"]["validationActions"] == ["Deny"]
    assert bare[1]["spec"]["validationActions"] == ["Warn"]
    names = '"gpu-a", "gpu-b"'
    assert names in seed[0]["spec"]["variables"][2]["expression"]
    assert names not in json.dumps(bare[0])
    assert 't.key == "sku\\\\\\"x"' in bare[0]["spec"]["variables"][1]["expression"]


@pytest.mark.parametrize("actions, mode", [
    (["Deny"], "Deny"), (["Warn", "Audit"], "Warn,Audit"), ([], "none"), (None, "none")])
def test_mode_of_joins_the_validation_actions(actions, mode):
    assert guard.mode_of({"spec": {"validationActions": actions}}) == mode
    assert guard.mode_of({}) == "none"


def test_exempt_of_reads_only_the_namespace_label_not_in():
    expressions = [
        {"key": guard.NAMESPACE_LABEL, "operator": "NotIn", "values": ["kube-system", "gpu-operator"]},
        {"key": guard.NAMESPACE_LABEL, "operator": "In", "values": ["in-only"]},
        {"key": "team", "operator": "NotIn", "values": ["other-key"]},
        {"key": guard.NAMESPACE_LABEL, "operator": "NotIn"},
    ]
    written_binding = {"spec": {"matchResources": {"namespaceSelector": {"matchExpressions": expressions}}}}
    assert guard.exempt_of(written_binding) == ("kube-system", "gpu-operator")
    assert guard.exempt_of({}) == ()


@pytest.mark.parametrize("version", ["v1.29.3", "1.29.3", "v1.29+", "v1.0.0", "v0.30.0"])
def test_check_server_refuses_a_server_older_than_1_30(version):
    with pytest.raises(UsageError) as raised:
        guard.check_server(version)
    assert str(raised.value) == ("the guard needs Kubernetes 1.30 or newer (admissionregistration.k8s.io/v1 "
                                 f"ValidatingAdmissionPolicy); the server is {version}")


@pytest.mark.parametrize("version", ["v1.30.0", "v1.33.5-gke.1", "v2.0", "v1.31+", "", "vx.y", "v1"])
def test_check_server_passes_1_30_and_newer_and_leaves_an_unreadable_one_to_the_write(version):
    assert guard.check_server(version) is None
