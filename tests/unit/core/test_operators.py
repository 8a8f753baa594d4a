"""core/operators.py's tables against docs/design.md's "Pods that operators own": every row of
KINDS and LABELS is documented with its operator, effect and words, and nothing else is."""

from kubectl_gpuisolate.core import operators
from kubectl_gpuisolate.core.operators import RECREATES, RESTARTS, owner_of

from ..design_tables import code_names, design_rows
from ..factories import owner, pod

ROWS = design_rows("## Pods that operators own")


def documented():
    """{(group, kind) or label: (operator, effect, does)} as the table says."""
    found = {}
    for row in ROWS:
        cell = row["owner (API group, kind, or pod label)"]
        facts = (row["operator"], row["on an eviction"], row["what it does"])
        names = code_names(cell)
        if cell.startswith("label"):
            found[names[0]] = facts
        elif "label" not in cell:
            group, *kinds = names
            found.update({(group, kind): facts for kind in kinds})
    return found


def test_every_known_kind_and_label_is_a_row_of_the_table():
    expected = {key: (k.operator, k.effect, k.does) for key, k in operators.KINDS.items()}
    expected.update({label: (k.operator, k.effect, k.does) for label, _, k in operators.LABELS})
    assert documented() == expected


def test_the_rows_named_by_a_label_on_a_kind_are_the_code_special_cases():
    special = {row["what it does"] for row in ROWS
               if "label" in row["owner (API group, kind, or pod label)"]
               and not row["owner (API group, kind, or pod label)"].startswith("label")}
    head = owner_of(pod(labels={"ray.io/node-type": "head"}), owner("RayCluster", "rc", "ray.io/v1"))
    executor = owner_of(pod(labels={"spark-role": "executor"}), owner("Pod", "driver", "v1"))
    assert special == {head.known.does, executor.known.does}
    assert (head.known.effect, executor.known.effect) == (RESTARTS, RECREATES)


def test_a_built_in_controller_of_another_group_is_not_read_as_one():
    volcano = owner_of(pod(), owner("Job", "vj", "batch.volcano.sh/v1alpha1"))
    batch = owner_of(pod(), owner("Job", "j", "batch/v1"))
    assert (volcano.template_read, volcano.restarts_job) == (False, True)
    assert (batch.template_read, batch.known, batch.restarts_job) == (True, None, False)


def test_the_template_kinds_are_those_the_api_reads():
    from kubectl_gpuisolate.kube.api import CONTROLLER_PATHS
    read = {(path.split("/")[2] if path.startswith("/apis/") else "", kind)
            for kind, path in CONTROLLER_PATHS.items()}
    assert read | {("apps", "DaemonSet")} == operators.TEMPLATE_KINDS


def test_a_bare_pod_is_no_operators():
    bare = owner_of(pod(owner_ref=None), None)
    assert (bare.name, bare.known, bare.notes, bare.unknown_warning("a/b")) == ("", None, (), "")


def test_workload_text_names_a_deployment_only_when_the_hash_says_so():
    rs = owner("ReplicaSet", "web-5d4f8")
    assert operators.workload_text(pod(labels={"pod-template-hash": "5d4f8"}), rs) == "Deployment/web"
    assert operators.workload_text(pod(labels={"pod-template-hash": "other"}), rs) == "ReplicaSet/web-5d4f8"
    assert operators.workload_text(pod(), rs) == "ReplicaSet/web-5d4f8"


# -- owner_of and workload_text, whole, on their edges ---------------------------------------------
def test_owner_of_each_path_whole():
    ray_head = owner_of(pod(labels={"ray.io/node-type": "head"}), owner("RayCluster", "rc", "ray.io/v1"))
    assert ray_head == operators.Owner("RayCluster/rc", False, operators._RAY_HEAD, "ray.io/v1")
    executor = owner_of(pod(labels={"spark-role": "executor"}), owner("Pod", "driver", "v1"))
    assert executor == operators.Owner("Pod/driver", False, operators._SPARK_EXECUTOR, "v1")
    assert owner_of(pod(), None) == operators.Owner("", True)
    assert owner_of(pod(), owner("ReplicaSet", "web-1", "apps/v1")) == \
        operators.Owner("ReplicaSet/web-1", True)
    # A Pod owner that is not a Spark executor's driver, and a label on another kind: neither special.
    assert owner_of(pod(labels={"spark-role": "driver"}), owner("Pod", "p", "v1")) == \
        operators.Owner("Pod/p", False, None, "v1")
    assert owner_of(pod(labels={"spark-role": "executor"}), owner("Thing", "t", "example.com/v1")) == \
        operators.Owner("Thing/t", False, None, "example.com/v1")


def test_owner_of_a_ref_missing_its_fields_names_it_empty():
    assert owner_of(pod(), {}) == operators.Owner("/", False, None, "")
    assert owner_of(pod(), {"kind": "Thing"}) == operators.Owner("Thing/", False, None, "")


def test_workload_text_of_a_ref_missing_its_fields():
    assert operators.workload_text(pod(), {}) == "/"
    assert operators.workload_text(pod(), {"name": "x"}) == "/x"
    assert operators.workload_text(pod(), {"kind": "Job"}) == "Job/"
