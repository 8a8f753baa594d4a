"""Pods that operators own: who replaces an evicted pod, and what else its eviction costs.

Pure.  The landing check reads the pod template of the built-in controllers only
(``TEMPLATE_KINDS``); the pod of any other controller is judged from its own spec.  Some
operators recreate an evicted pod as a ReplicaSet would; others lose or restart a whole job
when one of its pods goes (a distributed training run, a workflow step, a Spark application).
``KINDS`` and ``LABELS`` say which, as data: docs/design.md's "Pods that operators own" table
lists the same rows, and a test compares them.
"""

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from .gpu import Obj

RECREATES = "recreates"      # the operator makes a new pod; nothing else is lost
RESTARTS = "restarts"        # the eviction restarts or fails a whole job: gated (--allow-job-restart)

# (API group, kind) of the controllers whose pod template the landing check reads.
TEMPLATE_KINDS = frozenset({("apps", "ReplicaSet"), ("apps", "StatefulSet"), ("batch", "Job"),
                            ("", "ReplicationController"), ("apps", "DaemonSet")})


@dataclass(frozen=True)
class Known:
    operator: str        # who acts on the eviction, e.g. "KubeRay"
    effect: str          # RECREATES or RESTARTS
    does: str            # what it does when one of the pods is evicted


_TRAINING = Known("the Kubeflow training operator", RESTARTS,
                  "restarts or fails the whole training job (its other workers lose their peer)")
_RAY_WORKER = Known("KubeRay", RECREATES, "recreates the worker pod")
_RAY_HEAD = Known("KubeRay", RESTARTS,
                  "loses the Ray head: every job on the cluster fails unless GCS fault tolerance is on")
_SPARK_DRIVER = Known("the Spark operator", RESTARTS,
                      "fails the Spark application (resubmitted only under its restartPolicy)")

# By the controller's (API group, kind).
KINDS: Dict[Tuple[str, str], Known] = {
    ("ray.io", "RayCluster"): _RAY_WORKER,
    ("ray.io", "RayJob"): Known("KubeRay", RESTARTS, "fails or retries the Ray job"),
    **{("kubeflow.org", kind): _TRAINING
       for kind in ("PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob")},
    ("trainer.kubeflow.org", "TrainJob"): Known("Kubeflow Trainer", RESTARTS,
                                                 "restarts or fails the whole TrainJob"),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): Known(
        "LeaderWorkerSet", RESTARTS, "recreates the whole group, leader and workers"),
    ("argoproj.io", "Workflow"): Known("Argo Workflows", RESTARTS,
                                       "fails the workflow step (retried only under its retryStrategy)"),
    ("sparkoperator.k8s.io", "SparkApplication"): _SPARK_DRIVER,
    ("serving.kserve.io", "InferenceService"): Known("KServe", RECREATES, "recreates the predictor pod"),
    ("batch.volcano.sh", "Job"): Known("Volcano", RESTARTS,
                                       "restarts the whole Volcano job (its PodEvicted policy)"),
    ("jobset.x-k8s.io", "JobSet"): Known("JobSet", RESTARTS,
                                         "fails the JobSet or restarts every one of its Jobs"),
}

# Operators that work through built-in controllers, known by a label of their pods: (label,
# the kind it names, what is done).  The first that the pod carries speaks.
LABELS: Tuple[Tuple[str, str, Known], ...] = (
    ("leaderworkerset.sigs.k8s.io/name", "LeaderWorkerSet",
     KINDS["leaderworkerset.x-k8s.io", "LeaderWorkerSet"]),
    ("jobset.sigs.k8s.io/jobset-name", "JobSet", KINDS["jobset.x-k8s.io", "JobSet"]),
    ("serving.kserve.io/inferenceservice", "InferenceService",
     KINDS["serving.kserve.io", "InferenceService"]),
)
_SPARK_EXECUTOR = Known("the Spark driver", RECREATES, "asks for a new executor; its tasks rerun")


@dataclass(frozen=True)
class Owner:
    """What is known of a pod's controller for its eviction."""
    name: str                     # Kind/name of who acts, e.g. "RayCluster/rc" or "JobSet/train"
    template_read: bool           # the landing check reads its pod template
    known: Optional[Known] = None  # None: an operator the plugin does not know (or a built-in one)
    api_version: str = ""          # the controller's, for the unknown-operator warning

    @property
    def restarts_job(self) -> bool:
        return self.known is not None and self.known.effect == RESTARTS

    @property
    def notes(self) -> Tuple[str, ...]:
        """What a move's verdict says of a controller whose template is not read, and of what a
        known operator does on the eviction."""
        unread = () if self.template_read else (
            f"landing judged from the pod itself: {self.name}'s template is not read",)
        return unread + ((f"{self.known.operator} {self.known.does}",) if self.known else ())

    def unknown_warning(self, pod_ref: str) -> str:
        if self.template_read or self.known:
            return ""
        return (f"pod {pod_ref} is controlled by {self.name} ({self.api_version}), which the plugin "
                "does not know: its landing is judged from the pod itself, and what its operator "
                "does on the eviction is not known")


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def owner_of(pod: Obj, ref: Optional[Obj]) -> Owner:
    """The pod's controller ``ref`` (None: a bare pod), as the planner judges its eviction."""
    if ref is None:
        return Owner("", True)
    kind, api_version = ref.get("kind", ""), ref.get("apiVersion", "")
    group = group_of(api_version)
    name = f"{kind}/{ref.get('name', '')}"
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    if (group, kind) in TEMPLATE_KINDS:
        for label, label_kind, known in LABELS:
            if labels.get(label):
                return Owner(f"{label_kind}/{labels[label]}", True, known)
        return Owner(name, True)
    if (group, kind) == ("ray.io", "RayCluster") and labels.get("ray.io/node-type") == "head":
        return Owner(name, False, _RAY_HEAD, api_version)
    if (group, kind) == ("", "Pod") and labels.get("spark-role") == "executor":
        return Owner(name, False, _SPARK_EXECUTOR, api_version)
    return Owner(name, False, KINDS.get((group, kind)), api_version)


def workload_text(pod: Obj, owner_ref: Optional[Obj]) -> str:
    """Where a pod's spec is written: a ReplicaSet named ``<name>-<pod-template-hash>`` is a
    Deployment's (the name says so; the ReplicaSet is not read), else the controller, else
    the pod itself."""
    if owner_ref is None:
        return "the pod itself (it has no controller)"
    kind, name = owner_ref.get("kind", ""), owner_ref.get("name", "")
    template_hash = ((pod.get("metadata") or {}).get("labels") or {}).get("pod-template-hash")
    if kind == "ReplicaSet" and template_hash and name.endswith("-" + template_hash):
        return f"Deployment/{name[:-len(template_hash) - 1]}"
    return f"{kind}/{name}"
