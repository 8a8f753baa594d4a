"""The `seed` scenario: the NKP cluster of ../shared/seed-scenario.md.

Ordinary pods are placed on the GPU nodes the way they got there in the real
cluster: by the scheduler, while the other nodes happened to be unavailable.
The loader cordons every node except a phase's targets, creates that phase's
workloads, waits until their pods run there, and finally restores all nodes
(untainted, schedulable GPU nodes). The pods themselves carry no affinity.
"""
from . import objects as o

GPU_A = "nkpnai-gpupool-1-z9mz6-pl9k2-4n5fm"
GPU_B = "nkpnai-gpupool-1-z9mz6-pl9k2-9xdn9"
CPU_WORKERS = ["nkpnai-md-0-xqwvn-zlrmk-62gc2", "nkpnai-md-0-xqwvn-zlrmk-c5h88",
               "nkpnai-md-0-xqwvn-zlrmk-knrqk", "nkpnai-md-0-xqwvn-zlrmk-zhdm4"]
CONTROL_PLANE = ["nkpnai-vvzvd-cctr2", "nkpnai-vvzvd-ck76s", "nkpnai-vvzvd-k4z42"]
GPU_NODES = [GPU_A, GPU_B]
ALL_NODES = GPU_NODES + CPU_WORKERS + CONTROL_PLANE
NAMESPACES = ["kube-system", "metallb-system", "kommander", "nai-system", "nai-admin",
              "envoy-gateway-system", "git-operator-system", "kubecost", "kserve"]

ROOK_NS = "kommander"  # NKP installs rook-ceph into kommander (the seed lists its pods among kommander's)
OSD_CLAIM = "rook-ceph-osd-set1-data-0vnfjx"  # the PVC in the seed's osd-prepare pod's name
OSD_VOLUME = "local-pv-rook-osd-set1-9xdn9"
ROOK_ON_GPU_B = {  # deployment name -> what keeps it there (tests/e2e read this)
    f"rook-ceph-crashcollector-{GPU_B}": "nodeSelector", f"rook-ceph-exporter-{GPU_B}": "nodeSelector",
    "rook-ceph-mon-c": "nodeSelector", "rook-ceph-osd-1": "local PV"}
ROOK_MOVES = "rook-ceph-rgw-dkp-object-store-a"
ROOK_PREPARE_JOB = f"rook-ceph-osd-prepare-{OSD_CLAIM}"

SEED_TOLERATIONS = [o.GPU_TOLERATION]  # llama32-iep-predictor; DefaultTolerationSeconds adds the rest


def capi_annotations(name):
    """What Cluster API puts on the seed's nodes (research platforms.md, "Scenarios to test" #1):
    the Machine, and its owner: a MachineSet for the workers, the KubeadmControlPlane else."""
    if name in CONTROL_PLANE:
        kind, owner = "KubeadmControlPlane", "nkpnai-vvzvd"
    else:
        kind, owner = "MachineSet", name.rsplit("-", 1)[0]
    return {"cluster.x-k8s.io/cluster-name": "nkpnai", "cluster.x-k8s.io/cluster-namespace": "default",
            "cluster.x-k8s.io/machine": name, "cluster.x-k8s.io/owner-kind": kind,
            "cluster.x-k8s.io/owner-name": owner}


def nodes():
    out = [o.node(n, "worker", 48, 384, gpus=2) for n in GPU_NODES]
    out += [o.node(n, "worker", 16, 64) for n in CPU_WORKERS]
    out += [o.node(n, "control-plane", 8, 32) for n in CONTROL_PLANE]
    for node in out:
        node["metadata"]["annotations"].update(capi_annotations(node["metadata"]["name"]))
    return out


def _spec(image, cpu="100m", memory="256Mi", **kw):
    return o.pod_spec(image, cpu, memory, **kw)


def daemonsets():
    cp_only = [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
               {"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"}]
    gpu_sel = {"nvidia.com/gpu.present": "true"}
    return [  # (object, expected pods)
        (o.daemonset("kube-system", "cilium", _spec("quay.io/cilium/cilium:v1.16.5",
                                                     tolerations=o.TOLERATE_ALL)), 9),
        (o.daemonset("kube-system", "kube-proxy", _spec("registry.k8s.io/kube-proxy:v1.33.5",
                                                         tolerations=o.TOLERATE_ALL)), 9),
        (o.daemonset("metallb-system", "metallb-speaker", _spec("quay.io/metallb/speaker:v0.14.9",
                                                                 tolerations=cp_only)), 9),
        (o.daemonset("kommander", "nvidia-device-plugin-daemonset", _spec(
            "nvcr.io/nvidia/k8s-device-plugin:v0.17.1", tolerations=[o.GPU_TOLERATION],
            node_selector=gpu_sel)), 2),
        (o.daemonset("kommander", "nvidia-dcgm-exporter", _spec(
            "nvcr.io/nvidia/k8s/dcgm-exporter:4.1.1-4.0.4-ubuntu22.04", tolerations=[o.GPU_TOLERATION],
            node_selector=gpu_sel)), 2),
        (o.daemonset("kommander", "kube-prometheus-stack-prometheus-node-exporter",
                     _spec("quay.io/prometheus/node-exporter:v1.9.0")), 6),
        (o.daemonset("kommander", "logging-operator-logging-fluentbit",
                     _spec("fluent/fluent-bit:3.2.5", empty_dir="positions")), 6),
    ]


def volumes():
    """The OSD's disk: a `local` PersistentVolume on GPU node B and its pre-bound claim (Rook's
    storageClassDeviceSets on local disks). Created before the phases; cluster-scoped PV included."""
    affinity = o.host_affinity("kubernetes.io/hostname", [GPU_B])
    return [o.persistent_volume(OSD_VOLUME, ROOK_NS, OSD_CLAIM, affinity, local_path="/dev/sdb"),
            o.persistent_volume_claim(ROOK_NS, OSD_CLAIM, OSD_VOLUME)]


def rook_on_gpu_b():
    """rook-ceph's pods on GPU node B, shaped as Rook makes them: the crash collector, the exporter
    and the mon pinned by a hostname nodeSelector (the mon's data on a host path), the OSD on its
    local PV, the rgw free to move, and the OSD's completed prepare Job."""
    d = o.deployment
    pin = {"kubernetes.io/hostname": GPU_B}
    ceph = "quay.io/ceph/ceph:v18.2.4"
    host = [{"name": "rook-data", "hostPath": {"path": "/var/lib/rook"}}]
    mon_data = [{"name": "ceph-daemon-data", "hostPath": {"path": "/var/lib/rook/mon-c/data"}}]
    osd_disk = [{"name": "osd-data", "persistentVolumeClaim": {"claimName": OSD_CLAIM}}]
    return [
        (d(ROOK_NS, f"rook-ceph-crashcollector-{GPU_B}", 1,
           o.with_volumes(_spec(ceph, node_selector=pin), host)), 1),
        (d(ROOK_NS, f"rook-ceph-exporter-{GPU_B}", 1,
           o.with_volumes(_spec(ceph, node_selector=pin), host)), 1),
        (d(ROOK_NS, "rook-ceph-mon-c", 1, o.with_volumes(_spec(ceph, "200m", "512Mi", node_selector=pin),
                                                         mon_data)), 1),
        (d(ROOK_NS, "rook-ceph-osd-1", 1, o.with_volumes(_spec(ceph, "200m", "1Gi"), osd_disk)), 1),
        (d(ROOK_NS, ROOK_MOVES, 1, _spec(ceph)), 1),
        (o.job(ROOK_NS, ROOK_PREPARE_JOB, o.with_volumes(_spec("rook/ceph:v1.15.5"), osd_disk)), 1),
    ]


def phases():
    """(target nodes, [(object, expected pods)]) in load order."""
    d, s, j = o.deployment, o.statefulset, o.job
    on_gpu_a = [
        (d("nai-admin", "llama32-iep-predictor", 1, _spec(
            "nutanix/nai-kserve-huggingfaceserver:v0.15.2", "4", "16Gi", gpus=1, empty_dir="dshm",
            tolerations=SEED_TOLERATIONS)), 1),
        (j("nai-system", "nai-pulse-job-29558885", _spec("nutanix/nai-pulse:v2.4.0")), 1),
        (j("git-operator-system", "git-operator-admin-credentials-rotate-29558880",
           _spec("mesosphere/kubectl:v1.33.5")), 1),
        (d("envoy-gateway-system", "envoy-gateway", 1, _spec("envoyproxy/gateway:v1.3.2")), 1),
        (d("kommander", "kube-prometheus-stack-grafana", 1, _spec(
            "grafana/grafana:11.5.2", empty_dir="storage")), 1),
        (d("kommander", "kube-prometheus-stack-operator", 1,
           _spec("quay.io/prometheus-operator/prometheus-operator:v0.80.1")), 1),
        (d("kommander", "thanos-query", 2, _spec("quay.io/thanos/thanos:v0.37.2")), 2),
        (s("kommander", "alertmanager-kube-prometheus-stack-alertmanager", 1, _spec(
            "quay.io/prometheus/alertmanager:v0.28.0", empty_dir="alertmanager-db")), 1),
        (d("kommander", "velero", 1, _spec("velero/velero:v1.15.2", empty_dir="scratch")), 1),
        (d("kubecost", "kubecost-cost-analyzer", 1, _spec(
            "gcr.io/kubecost1/cost-model:prod-2.6.3", "200m", "512Mi", empty_dir="tmp")), 1),
        (s("git-operator-system", "git-operator-git", 1, _spec("mesosphere/gitea:1.23.4")), 1),
    ]
    on_gpu_b = [
        (s("nai-system", "nai-db", 1, _spec("postgres:16.8", "500m", "1Gi")), 1),
        (d("nai-system", "nai-ui", 1, _spec("nutanix/nai-ui:v2.4.0", empty_dir="cache")), 1),
        (d("nai-system", "nai-operators-nai-clickhouse-operator", 1,
           _spec("altinity/clickhouse-operator:0.24.4")), 1),
        (s("kommander", "prometheus-kube-prometheus-stack-prometheus", 1, _spec(
            "quay.io/prometheus/prometheus:v3.2.1", "500m", "2Gi", empty_dir="prometheus-db")), 1),
        (s("kommander", "logging-operator-logging-fluentd", 1,
           _spec("ghcr.io/kube-logging/fluentd:v1.16")), 1),
        (d("kommander", "kube-prometheus-stack-kube-state-metrics", 1,
           _spec("registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.15.0")), 1),
        (d("kserve", "kserve-controller-manager", 1, _spec("kserve/kserve-controller:v0.15.2")), 1),
        (d("kommander", "kubernetes-dashboard-web", 1, _spec("kubernetesui/dashboard-web:1.6.2")), 1),
        *rook_on_gpu_b(),
    ]
    coredns_tol = [{"key": "CriticalAddonsOnly", "operator": "Exists"},
                   {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    on_cpu = [
        (d("nai-system", "nai-api", 2, _spec("nutanix/nai-api:v2.4.0")), 2),
        (d("nai-system", "nai-iep-model-controller", 1, _spec("nutanix/nai-iep-model-controller:v2.4.0")), 1),
        (d("nai-system", "redis-standalone", 1, _spec("redis:7.4.2", empty_dir="data")), 1),
        (j("nai-system", "nai-api-db-migrate-lylzy", _spec("nutanix/nai-api:v2.4.0")), 1),
        (d("kube-system", "coredns", 2, _spec("registry.k8s.io/coredns/coredns:v1.12.0",
                                               tolerations=coredns_tol)), 2),
        (d("metallb-system", "metallb-controller", 1, _spec("quay.io/metallb/controller:v0.14.9")), 1),
        (d("kommander", "kommander-webhook", 1, _spec("mesosphere/kommander2-webhook:v2.15.0")), 1),
    ]
    return [([GPU_A], on_gpu_a), ([GPU_B], on_gpu_b), (CPU_WORKERS, on_cpu)]


def pdbs():
    """(object, expected disruptionsAllowed)."""
    return [
        (o.pdb("nai-system", "nai-db", "nai-db", min_available=1), 0),
        (o.pdb("nai-system", "nai-api", "nai-api", min_available=1), 1),
        (o.pdb("kommander", "thanos-query", "thanos-query", max_unavailable=1), 1),
        (o.pdb("kube-system", "coredns", "coredns", max_unavailable=1), 1),
    ]


def node_taints(name):
    return [dict(o.CONTROL_PLANE_TAINT)] if name in CONTROL_PLANE else []
