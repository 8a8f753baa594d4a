"""Command line of scripts/sandbox."""
import argparse
import signal
import sys

from . import control, versions
from .kube import ApiError
from .procs import SandboxError


def parser():
    p = argparse.ArgumentParser(
        prog="scripts/sandbox",
        description="A real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, "
                    "kube-scheduler; v1.33 unless --k8s-version) with kwok nodes, on 127.0.0.1. "
                    "State in $SANDBOX_DIR (default .sandbox/).")
    sub = p.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up", help="start the sandbox and load a scenario (no-op when already up)")
    u.add_argument("--scenario", choices=["seed", "scale", "platforms"], default=None,
                   help="seed (default): the 9-node NKP cluster; scale: many nodes and pods for benchmarks; "
                        "platforms: seed plus GPU nodes and pods shaped as "
                        "GKE, EKS, Karpenter, AKS, OpenShift, NKP")
    u.add_argument("--k8s-version", choices=versions.available(), default=None,
                   help=f"the control plane's Kubernetes minor (default $SANDBOX_K8S_VERSION, else "
                        f"{versions.DEFAULT}, the seed's); each is built once and cached")
    u.add_argument("--nodes", type=int, help="scale: number of nodes (default 2000)")
    u.add_argument("--gpu-nodes", type=int, help="scale: how many of them have GPUs (default 200)")
    u.add_argument("--pods", type=int, help="scale: number of pods (default 60000)")
    sub.add_parser("down", help="stop the processes started by up and remove the state")
    sub.add_parser("status", help="show each component; exit 1 unless the sandbox is up and healthy")
    sub.add_parser("env", help="print `export KUBECONFIG=...`")
    sub.add_parser("reset", help="restore the loaded scenario to its initial state")
    return p


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `scripts/sandbox status | head` stays quiet
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)  # up cleans up what it started
    args = parser().parse_args(argv)
    try:
        if args.cmd == "up":
            return control.up(args.scenario, args.nodes, args.gpu_nodes, args.pods, args.k8s_version)
        return {"down": control.down, "status": control.status, "env": control.env,
                "reset": control.reset}[args.cmd]()
    except (SandboxError, ApiError) as e:
        print(f"sandbox: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("sandbox: interrupted", file=sys.stderr)
        return 130
