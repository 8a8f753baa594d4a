"""The planner's cases for pods that operators own (core/operators.py): part of
test_planner.DECISION_CASES, so that every table test (the rules' rows, the declared reads, the
essentials projection) runs them too."""

import pytest

from kubectl_gpuisolate.core.planner import BLOCKED, FLAG_FORCE, FLAG_JOB_RESTART, MOVE, STAY

from ..factories import owner, pod

NOT_READ = "landing judged from the pod itself: {}'s template is not read"


def case(id, the_pod, action, reason, *, flags=(), warning="", message=None, **kwargs):
    return pytest.param(the_pod, kwargs, action, reason, tuple(flags), warning, (), message, id=id)


def crd(kind, name, api_version):
    return owner(kind, name, api_version)


OPERATOR_CASES = [
    # A known operator that recreates the pod: it moves, and the verdict says how it was judged.
    case("kuberay-worker", pod("rc-worker-x", owner_ref=crd("RayCluster", "rc", "ray.io/v1")),
         MOVE, "not-tolerated",
         message=NOT_READ.format("RayCluster/rc") + "; KubeRay recreates the worker pod"),
    case("kuberay-head-is-gated",
         pod("rc-head-x", owner_ref=crd("RayCluster", "rc", "ray.io/v1"),
             labels={"ray.io/node-type": "head"}),
         BLOCKED, "gated", flags=[FLAG_JOB_RESTART],
         message="evicting it, KubeRay loses the Ray head: every job on the cluster fails unless GCS "
                 "fault tolerance is on (RayCluster/rc) (use --allow-job-restart)"),
    case("kuberay-head-allowed",
         pod("rc-head-x", owner_ref=crd("RayCluster", "rc", "ray.io/v1"),
             labels={"ray.io/node-type": "head"}),
         MOVE, "not-tolerated", allow_job_restart=True, message="; KubeRay loses the Ray head"),
    case("pytorchjob-is-gated",
         pod("train-worker-0", owner_ref=crd("PyTorchJob", "train", "kubeflow.org/v1")), BLOCKED, "gated",
         flags=[FLAG_JOB_RESTART], message="evicting it, the Kubeflow training operator restarts or fails "
                                           "the whole training job"),
    case("tfjob-is-gated", pod("tf-ps-0", owner_ref=crd("TFJob", "tf", "kubeflow.org/v1")), BLOCKED,
         "gated", flags=[FLAG_JOB_RESTART], message="(TFJob/tf)"),
    case("mpijob-allowed", pod("mpi-worker-0", owner_ref=crd("MPIJob", "mpi", "kubeflow.org/v2beta1")),
         MOVE, "not-tolerated", allow_job_restart=True,
         message=NOT_READ.format("MPIJob/mpi") + "; the Kubeflow training operator restarts"),
    case("argo-step-is-gated", pod("wf-step-1", owner_ref=crd("Workflow", "wf", "argoproj.io/v1alpha1")),
         BLOCKED, "gated", flags=[FLAG_JOB_RESTART], message="Argo Workflows fails the workflow step"),
    case("spark-driver-is-gated",
         pod("app-driver", owner_ref=crd("SparkApplication", "app", "sparkoperator.k8s.io/v1beta2"),
             labels={"spark-role": "driver"}), BLOCKED, "gated", flags=[FLAG_JOB_RESTART],
         message="the Spark operator fails the Spark application"),
    case("spark-executor-recreated",
         pod("app-exec-1", owner_ref=crd("Pod", "app-driver", "v1"), labels={"spark-role": "executor"}),
         MOVE, "not-tolerated", message=NOT_READ.format("Pod/app-driver")
         + "; the Spark driver asks for a new executor; its tasks rerun"),
    case("bare-spark-driver-needs-force", pod("app-driver", owner_ref=None, labels={"spark-role": "driver"}),
         BLOCKED, "gated", flags=[FLAG_FORCE]),
    case("volcano-job-is-not-a-batch-job",
         pod("vj-task-0", owner_ref=crd("Job", "vj", "batch.volcano.sh/v1alpha1")), BLOCKED, "gated",
         flags=[FLAG_JOB_RESTART], message="restarts the whole Volcano job (its PodEvicted policy) (Job/vj)"),
    case("batch-job-is-read", pod("j-x", owner_ref=crd("Job", "j", "batch/v1")), MOVE, "not-tolerated",
         message="does not tolerate nvidia.com/gpu=true:NoSchedule"),
    # Operators that work through built-in controllers, known by their pods' labels.
    case("leaderworkerset-group",
         pod("lws-0-1", owner_ref=crd("StatefulSet", "lws-0", "apps/v1"),
             labels={"leaderworkerset.sigs.k8s.io/name": "vllm"}), BLOCKED, "gated",
         flags=[FLAG_JOB_RESTART], message="LeaderWorkerSet recreates the whole group, leader and workers "
                                           "(LeaderWorkerSet/vllm)"),
    case("jobset-job", pod("js-w-0-0", owner_ref=crd("Job", "js-w-0", "batch/v1"),
                           labels={"jobset.sigs.k8s.io/jobset-name": "js"}), BLOCKED, "gated",
         flags=[FLAG_JOB_RESTART], message="(JobSet/js)"),
    case("jobset-job-allowed-and-read", pod("js-w-0-0", owner_ref=crd("Job", "js-w-0", "batch/v1"),
                                            labels={"jobset.sigs.k8s.io/jobset-name": "js"}),
         MOVE, "not-tolerated", allow_job_restart=True,
         message="does not tolerate nvidia.com/gpu=true:NoSchedule; JobSet fails the JobSet"),
    case("kserve-predictor", pod("isvc-predictor-x", labels={"serving.kserve.io/inferenceservice": "isvc"}),
         MOVE, "not-tolerated", message="does not tolerate nvidia.com/gpu=true:NoSchedule; KServe "
                                        "recreates the predictor pod"),
    # An operator the plugin does not know: it moves, warned.
    case("unknown-operator", pod("x-0", owner_ref=crd("Widget", "w", "example.com/v1")), MOVE,
         "not-tolerated", message=NOT_READ.format("Widget/w"),
         warning="pod default/x-0 is controlled by Widget/w (example.com/v1), which the plugin does not "
                 "know: its landing is judged from the pod itself, and what its operator does on the "
                 "eviction is not known"),
    # A GPU pod of a training job stays, whatever its operator would do.
    case("pytorchjob-gpu-worker-stays",
         pod("train-worker-1", owner_ref=crd("PyTorchJob", "train", "kubeflow.org/v1"),
             requests={"nvidia.com/gpu": "1"}), STAY, "gpu-request",
         warning="does not tolerate nvidia.com/gpu=true:NoSchedule"),
]
