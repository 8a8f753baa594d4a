#!/usr/bin/env python3
"""evacuate at many PodDisruptionBudgets: peak threads, peak RSS and wall time for each size of
the engine's pool of chain workers (evacuation/engine.py CHAIN_WORKERS; 0: a thread per chain,
as before #35).  Standard library only; the sandbox must be up (scripts/sandbox up).

  SANDBOX_DIR=.cache/sb-bench-seed scripts/bench_budgets.py --budgets 500 --workers 0,32,8

The workload is scripts/bench_limit_evacuate.SpreadWorkload on 2 GPU nodes: ``--budgets``
ReplicaSets with one pod on each GPU node, each under a budget that allows one disruption, so
every chain has two pods and the second waits for the first one's replacement.  Each run starts
from a reset workload; the sizes take turns, ``--reps`` times.  The process is sampled every
10 ms (/proc/PID/status: Threads, VmRSS)."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import bench_evacuate as evac  # noqa: E402
from bench_limit_evacuate import SpreadWorkload  # noqa: E402

KUBECTL = os.environ.get("BENCH_KUBECTL", "/usr/bin/kubectl")
LAUNCH = ("import sys; sys.path.insert(0, {repo!r}); from kubectl_gpuisolate.evacuation import engine; "
          "engine.CHAIN_WORKERS = {workers}; from kubectl_gpuisolate.cli import entry_point; "
          "sys.argv[0] = 'kubectl-gpuisolate'; entry_point()")


def log(message):
    sys.stderr.write(f"[bench_budgets {time.strftime('%H:%M:%S')}] {message}\n")
    sys.stderr.flush()


def roomy(node):
    """The bench's nodes, with room for a pod of every budget beside the DaemonSets' pods."""
    def make(name, role):
        made = node(name, role)
        for key in ("capacity", "allocatable"):
            made["status"][key]["pods"] = "2000"
        return made
    return make


def sampled(cmd, env):
    """(wall seconds, peak threads, peak RSS MB) of ``cmd``, sampled every 10 ms; it must succeed."""
    err = tempfile.TemporaryFile("w+")     # not a pipe: its progress lines would fill one and stall it
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, text=True)
    threads = rss = 0
    status = Path(f"/proc/{proc.pid}/status")
    while proc.poll() is None:
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            threads = max(threads, int(fields["Threads"]))
            rss = max(rss, int(fields["VmRSS"].split()[0]) // 1024)
        except (OSError, KeyError, ValueError):
            pass
        time.sleep(0.01)
    wall = time.monotonic() - start
    err.seek(0)
    if proc.returncode != 0:
        raise SystemExit(f"bench_budgets: evacuate failed ({proc.returncode}): {err.read()[-500:]}")
    return wall, threads, rss


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", type=int, default=500)
    parser.add_argument("--workers", default="0,32,8", help="pool sizes to compare; 0: a thread per chain")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    sandbox = Path(os.environ.get("SANDBOX_DIR", REPO / ".sandbox")).resolve()
    env = dict(os.environ, KUBECONFIG=str(sandbox / "kubeconfig"))
    evac._node = roomy(evac._node)
    workload = SpreadWorkload(KUBECTL, env, log, 2)
    sizes = [int(w) for w in args.workers.split(",")]
    found = {w: [] for w in sizes}
    try:
        workload.setup()
        for rep in range(args.reps):
            for workers in sizes if rep % 2 == 0 else sizes[::-1]:
                workload.reset(args.budgets)
                code = LAUNCH.format(repo=str(REPO), workers=workers or 10 ** 9)
                cmd = [args.python, "-c", code, "evacuate", "--taint-first", "--parallel-nodes", "2",
                       "--timeout", "30m", *workload.gpu_nodes]
                found[workers].append(sampled(cmd, env))
                wall, threads, rss = found[workers][-1]
                log(f"rep {rep + 1}: {workers or 'a thread per chain'}: wall {wall:.1f} s, "
                    f"peak threads {threads}, peak RSS {rss} MB")
    finally:
        workload.cleanup()
    print(f"| chain workers ({args.budgets} budgets, 2 GPU nodes) | wall (median) | peak threads "
          "| peak RSS |")
    print("|---|---|---|---|")
    for workers, runs in found.items():
        wall = statistics.median(r[0] for r in runs)
        print(f"| {workers or 'a thread per chain (before)'} | {wall:.1f} s | "
              f"{max(r[1] for r in runs)} | {max(r[2] for r in runs)} MB |")


if __name__ == "__main__":
    main()
