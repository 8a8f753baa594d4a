"""commands/evacuate.py end to end against a fake cluster (plain dicts): the
taint fence, the preflight, the up-front PDB report, dry runs, the summary,
arrivals, the deadline and interrupts.  A fake clock: nothing really sleeps."""

import io
import json
import os
import signal
import sys
import threading

import pytest

from kubectl_gpuisolate import cli
from kubectl_gpuisolate.commands import evacuate
from kubectl_gpuisolate.commands.common import IO
from kubectl_gpuisolate.core.dryrun import DryRun
from kubectl_gpuisolate.core.taints import Taint
from kubectl_gpuisolate.errors import ConnectionFailed, Interrupted, UsageError
from kubectl_gpuisolate.evacuation.run import Evacuation, NodeState
from kubectl_gpuisolate.exits import (
    EXIT_INCOMPLETE,
    EXIT_OK,
    EXIT_PREFLIGHT,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    EXIT_USAGE,
)

from ..evict_fakes import FakeClock, FakeCluster, pdb_429
from ..factories import (
    GPU_A,
    GPU_B,
    GPU_TAINT,
    GPU_TAINT_PRESENT,
    GPU_TOLERATION,
    INFERENCE_TOLERATIONS,
    gpu_node,
    owner,
    pdb,
    pod,
)

EMPTY_DIR = [{"name": "cache", "emptyDir": {}}]
DS = owner("DaemonSet", "cilium")


def web(name, node=GPU_A, **kw):
    return pod(name, "apps", labels={"app": "web"}, node_name=node, **kw)


def seed_like(*, tainted=True):
    taints = [GPU_TAINT] if tainted else None
    nodes = [gpu_node(GPU_A, taints=taints), gpu_node(GPU_B, taints=taints)]
    pods = [
        pod("cilium-a", "kube-system", owner_ref=DS, node_name=GPU_A),
        pod("llama", "nai-admin", tolerations=INFERENCE_TOLERATIONS,
            requests={"nvidia.com/gpu": "1"}, node_name=GPU_A),
        pod("job-done", "nai-system", owner_ref=owner("Job", "pulse"), phase="Succeeded",
            node_name=GPU_A),
        web("web-1"), web("web-2", node=GPU_B),
        pod("grafana", "kommander", volumes=EMPTY_DIR, node_name=GPU_B),
        pod("cilium-b", "kube-system", owner_ref=DS, node_name=GPU_B),
    ]
    return nodes, pods


def options(*argv):
    args = cli.build_parser().parse_args(["evacuate", *argv])
    return evacuate.EvacuateOptions.from_args(args)


def execute(cluster, *argv, stop=None, clock=None):
    out, err = io.StringIO(), io.StringIO()
    code = evacuate.execute(cluster, options(*argv), out=out, err=err, clock=clock or FakeClock(),
                            stop=stop)
    return code, out.getvalue(), err.getvalue()


# -- the taint fence ------------------------------------------------------------------------------
def test_untainted_node_is_refused_in_one_line_and_nothing_moves():
    nodes, pods = seed_like(tainted=False)
    cluster = FakeCluster(nodes, pods)
    code, out, err = execute(cluster, GPU_A)
    assert code == EXIT_PREFLIGHT
    assert cluster.log == []
    lines = [line for line in err.splitlines() if "refused" in line]
    assert lines == [f"node/{GPU_A} refused: it lacks the GPU taint nvidia.com/gpu=true:NoSchedule, "
                     "so evicted pods could come straight back; run 'kubectl gpuisolate taint' "
                     "first or pass --taint-first"]
    assert "refused" in out


def test_taint_flag_taints_first_then_moves_only_what_does_not_tolerate():
    nodes, pods = seed_like(tainted=False)
    cluster = FakeCluster(nodes, pods)
    code, out, err = execute(cluster, "--taint-first", "--delete-emptydir-data")
    assert code == EXIT_OK, err
    assert cluster.log[:2] == [("taint", GPU_A), ("taint", GPU_B)]
    assert sorted(cluster.evicted()) == ["apps/web-1", "apps/web-2", "kommander/grafana"]
    left = {p["metadata"]["name"] for p in cluster.pods}
    assert left == {"cilium-a", "cilium-b", "llama", "job-done"}
    assert f"node/{GPU_A} tainted\n" in out
    assert all(not n["spec"].get("unschedulable") for n in cluster.nodes.values())
    summary = out.split("\n", 2)[2]
    assert "evacuated" in summary and "3 (1 daemonset, 1 finished, 1 gpu-request)" in summary


def test_other_taint_value_counts_as_the_fence():
    nodes, pods = seed_like(tainted=False)
    nodes[0]["spec"]["taints"] = [GPU_TAINT_PRESENT]
    cluster = FakeCluster(nodes, pods)
    code, out, err = execute(cluster, GPU_A, "--taint-first")
    assert code == EXIT_OK, err
    assert ("taint", GPU_A) not in cluster.log
    assert f"node/{GPU_A} already tainted" in out
    assert cluster.evicted() == ["apps/web-1"]


def test_a_cordon_is_left_as_it_is():
    nodes, pods = seed_like()
    nodes[0]["spec"]["unschedulable"] = True
    cluster = FakeCluster(nodes, pods)
    code, _, err = execute(cluster, GPU_A)
    assert code == EXIT_OK
    assert cluster.nodes[GPU_A]["spec"]["unschedulable"] is True
    assert "is cordoned, not by evacuate; leaving the cordon as it is" in err


# -- the preflight ----------------------------------------------------------------------------------
def test_gated_pods_refuse_their_node_and_name_every_pod_and_flag():
    nodes, pods = seed_like()
    pods.append(pod("bare", "default", owner_ref=None, node_name=GPU_B))
    cluster = FakeCluster(nodes, pods)
    code, out, err = execute(cluster)
    assert code == EXIT_PREFLIGHT
    assert cluster.evicted() == ["apps/web-1"]             # GPU_A is fine and is evacuated
    assert f"node/{GPU_B} refused, nothing will be evicted there:" in err
    assert "pod default/bare does not tolerate" in err and "(use --force)" in err
    assert "pod kommander/grafana does not tolerate" in err and "(use --delete-emptydir-data)" in err
    assert "rerun with --delete-emptydir-data --force to allow these pods" in err
    assert "Refused by the preflight" in out


def test_multi_pdb_pod_is_reported_with_its_pdbs_before_any_eviction():
    nodes, pods = seed_like()
    pdbs = [pdb("web", "apps", selector={"matchLabels": {"app": "web"}}),
            pdb("everything", "apps", selector={})]
    cluster = FakeCluster(nodes, pods, pdbs)
    code, _, err = execute(cluster, GPU_A)
    assert code == EXIT_PREFLIGHT
    assert cluster.evicted() == []
    assert "several PodDisruptionBudgets (web, everything)" in err


def test_never_allowing_pdb_is_reported_before_the_first_eviction():
    nodes, pods = seed_like()
    pdbs = [pdb("web", "apps", selector={"matchLabels": {"app": "web"}}, min_available=1,
                allowed=0, desired=1, healthy=1, expected=1)]
    order = []
    cluster = FakeCluster(nodes, pods, pdbs, script={"web-1": [pdb_429("web", 1, 1)]},
                          on_evict=lambda c, name: order.append("evict"))
    err_stream = io.StringIO()

    class Recorder(io.StringIO):
        def write(self, text):
            if "can never allow an eviction" in text:
                order.append("warning")
            return err_stream.write(text)
    out = io.StringIO()
    code = evacuate.execute(cluster, options(GPU_A), out=out, err=Recorder(), clock=FakeClock())
    err = err_stream.getvalue()
    assert order[:2] == ["warning", "evict"]
    assert code == EXIT_INCOMPLETE
    assert ("PodDisruptionBudget apps/web can never allow an eviction (minAvailable 1 >= its 1 "
            "pod(s); needs 1 healthy, has 1): apps/web-1 will not move") in err
    assert cluster.evicted() == ["apps/web-1"]              # one attempt: the server decides
    assert "PDB apps/web: needs 1 healthy, has 1" in out.getvalue()


def test_finished_daemonset_gpu_and_tolerating_pods_stay():
    nodes, pods = seed_like()
    pods.append(pod("tolerant", "apps", tolerations=[GPU_TOLERATION], node_name=GPU_A))
    cluster = FakeCluster(nodes, pods)
    code, _, _ = execute(cluster, GPU_A)
    assert code == EXIT_OK
    assert cluster.evicted() == ["apps/web-1"]


def test_terminating_pods_are_waited_for_not_evicted():
    nodes, pods = seed_like()
    pods.append(web("web-old", deleting=True))
    cluster = FakeCluster(nodes, pods, on_evict=lambda c, name: c.pods.remove(
        next(p for p in c.pods if p["metadata"]["name"] == "web-old")))
    code, out, err = execute(cluster, GPU_A, "-o", "json")
    assert code == EXIT_OK
    assert cluster.evicted() == ["apps/web-1"]
    assert f"node/{GPU_A}: 1 pod(s) to evict, 1 terminating, 3 stay" in err
    assert "pod apps/web-old gone" in err           # waited for: pending until it went
    node = json.loads(out)["nodes"][0]
    assert sorted(node["moved"]) == ["apps/web-1", "apps/web-old"]
    assert node["pending"] == [] and node["failed"] == []


def test_the_evacuation_returns_its_results_and_prints_no_data():
    nodes, pods = seed_like()
    pods.append(pod("bare", "default", owner_ref=None, node_name=GPU_B))
    cluster = FakeCluster(nodes, pods)
    out, err = io.StringIO(), io.StringIO()
    results = Evacuation(cluster, options().settings(), out=out, err=err, clock=FakeClock()).run()
    assert out.getvalue() == ""
    assert [(r.name, r.state, r.refused) for r in results] == [
        (GPU_A, NodeState.EVACUATED, False), (GPU_B, NodeState.REFUSED, True)]
    assert [o.target.ref for o in results[0].outcomes] == ["apps/web-1"]
    assert evacuate.exit_code(results) == EXIT_PREFLIGHT


# -- dry runs -----------------------------------------------------------------------------------
def test_client_dry_run_prints_the_plan_and_writes_nothing():
    nodes, pods = seed_like(tainted=False)
    cluster = FakeCluster(nodes, pods)
    code, out, err = execute(cluster, "--taint-first", "--dry-run=client")
    assert code == EXIT_PREFLIGHT                # grafana needs --delete-emptydir-data
    assert cluster.log == []
    assert f"node/{GPU_A} tainted (dry run)" in out
    assert f"node/{GPU_A}: GPU taint nvidia.com/gpu=true:NoSchedule; would evict 1 pod(s)" in out
    assert f"node/{GPU_B}: GPU taint nvidia.com/gpu=true:NoSchedule; would be refused" in out
    rows = {tuple(line.split()[:4]) for line in out.splitlines()}
    assert ("apps", "web-1", "evict", "not-tolerated") in rows
    assert ("nai-admin", "llama", "stay", "gpu-request") in rows
    assert ("nai-system", "job-done", "stay", "finished") in rows
    assert ("kommander", "grafana", "blocked", "gated") in rows


def test_client_dry_run_json():
    nodes, pods = seed_like()
    cluster = FakeCluster(nodes, pods)
    code, out, _ = execute(cluster, GPU_A, "--dry-run=client", "-o", "json")
    doc = json.loads(out)
    assert code == EXIT_OK
    assert doc["schemaVersion"] == "gpuisolate.evacuate/v1"
    assert doc["nodes"][0]["wouldMove"] == ["apps/web-1"]
    assert doc["nodes"][0]["stayed"]["finished"] == ["nai-system/job-done"]


def test_server_dry_run_reports_a_blocking_pdb_and_changes_nothing():
    nodes, pods = seed_like()
    pdbs = [pdb("web", "apps", selector={"matchLabels": {"app": "web"}}, max_unavailable=0,
                allowed=0, desired=2, healthy=2, expected=2)]
    cluster = FakeCluster(nodes, pods, pdbs, script={"web-1": [pdb_429("web", 2, 2)]})
    before = len(cluster.pods)
    code, out, err = execute(cluster, GPU_A, "--dry-run=server")
    assert code == EXIT_INCOMPLETE
    assert len(cluster.pods) == before
    assert cluster.log == [("evict", "apps/web-1", DryRun.SERVER)]
    assert "PDB apps/web: needs 2 healthy, has 2" in out
    assert "WOULD MOVE" in out and "server dry run" in out


# -- summary, arrivals, json ----------------------------------------------------------------------
def test_arrivals_during_the_run_are_reported():
    nodes, pods = seed_like()

    def bare_pod_arrives(cluster, name):
        cluster.pods.append(pod("sneaky", "default", owner_ref=None, node_name=GPU_A))
    cluster = FakeCluster(nodes, pods, on_evict=bare_pod_arrives)
    code, out, err = execute(cluster, GPU_A)
    assert code == EXIT_OK
    assert "pod default/sneaky arrived on node/" in err
    assert "Arrived during the run:" in out and "default/sneaky" in out


def test_json_summary():
    nodes, pods = seed_like()
    cluster = FakeCluster(nodes, pods)
    code, out, _ = execute(cluster, "--delete-emptydir-data", "-o", "json")
    doc = json.loads(out)
    assert code == EXIT_OK
    assert [n["result"] for n in doc["nodes"]] == ["evacuated", "evacuated"]
    assert doc["nodes"][1]["moved"] == ["apps/web-2", "kommander/grafana"]
    assert doc["nodes"][0]["stayed"] == {"daemonset": ["kube-system/cilium-a"],
                                         "finished": ["nai-system/job-done"],
                                         "gpu-request": ["nai-admin/llama"]}


# -- deadline and interrupts ----------------------------------------------------------------------
def test_deadline_leaves_later_nodes_not_started_and_names_every_pending_pod():
    nodes, pods = seed_like()
    cluster = FakeCluster(nodes, pods, [pdb("web", "apps", selector={"matchLabels": {"app": "web"}},
                                            allowed=0, desired=1, healthy=0, expected=2)],
                          script={"web-1": [pdb_429("web", 1, 0)]})
    code, out, err = execute(cluster, "--delete-emptydir-data", "--timeout", "1m",
                             clock=FakeClock(lanes_only=True))
    assert code == EXIT_INCOMPLETE
    assert "allows no eviction now (needs 1 healthy, has 0)" in err
    rows = [line.split(None, 4) for line in out.split("Not moved:\n")[1].splitlines()[1:]]
    assert [GPU_A, "apps/web-1", "pending", "PDB apps/web: needs 1 healthy, has 0"] in \
        [r[:3] + [" ".join(r[3:])] for r in rows]
    assert any(r[0] == GPU_B and "not started: the deadline passed before this node" in " ".join(r)
               for r in rows)
    assert "apps/web-2" not in cluster.evicted()


def test_interrupt_stops_new_evictions_and_prints_what_is_pending():
    nodes, pods = seed_like()
    stop = threading.Event()
    cluster = FakeCluster(nodes, pods, on_evict=lambda c, name: stop.set())
    code, out, err = execute(cluster, "--delete-emptydir-data", stop=stop)
    assert cluster.evicted() == ["apps/web-1"]
    assert "interrupted: no new evictions were started" in err
    assert "not started: interrupted before this node" in out


@pytest.mark.parametrize("signum, exit_code", [(signal.SIGINT, EXIT_SIGINT),
                                               (signal.SIGTERM, EXIT_SIGTERM)])
def test_signals_exit_130_or_143_after_the_summary(capfd, signum, exit_code):
    nodes, pods = seed_like()
    cluster = FakeCluster(nodes, pods, on_evict=lambda c, name: os.kill(os.getpid(), signum))
    before = signal.getsignal(signum)
    with pytest.raises(Interrupted) as caught:
        evacuate.run(options("--delete-emptydir-data"), cluster, IO(out=sys.stdout, err=sys.stderr))
    assert caught.value.exit_code == exit_code
    assert signal.getsignal(signum) is before
    out, err = capfd.readouterr()
    assert "NODE" in out and "not started: interrupted before this node" in out
    name = signal.Signals(signum).name
    assert f"{name}: stopping, no new evictions start; send {name} again to quit at once\n" in err
    assert cluster.evicted() == ["apps/web-1"]


# -- options --------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, message", [
    (["--grace-period", "-2"], "--grace-period"),
    (["--max-parallel", "0"], "--max-parallel"),
    (["--parallel-nodes", "0"], "--parallel-nodes"),
    (["--timeout", "soon"], "--timeout"),
    (["--gpu-taint", "nvidia.com/gpu"], "missing effect"),
])
def test_invalid_options(argv, message):
    with pytest.raises(UsageError) as caught:
        options(*argv)
    assert caught.value.exit_code == EXIT_USAGE == 2
    assert message in str(caught.value)


def test_option_defaults():
    opts = options()
    assert opts.timeout == 600 and opts.max_parallel == 8 and opts.parallel_nodes == 1
    assert opts.grace_period == -1 and opts.dry_run is DryRun.NONE
    assert opts.gpu_taint == Taint("nvidia.com/gpu", "true", "NoSchedule")
    assert options("--timeout", "0").timeout is None


def test_parallel_nodes_evacuates_several_nodes_and_keeps_their_order():
    nodes, pods = seed_like()
    cluster = FakeCluster(nodes, pods)
    code, out, err = execute(cluster, "--delete-emptydir-data", "--parallel-nodes", "2")
    assert code == EXIT_OK, err
    assert sorted(cluster.evicted()) == ["apps/web-1", "apps/web-2", "kommander/grafana"]
    rows = [line.split()[:2] for line in out.splitlines()[1:3]]
    assert rows == [[GPU_A, "evacuated"], [GPU_B, "evacuated"]]


def test_each_node_is_planned_again_when_its_turn_comes():
    nodes, pods = seed_like()

    def bare_pod_lands_on_the_next_node(cluster, name):
        if name == "web-1":
            cluster.pods.append(pod("late", "default", owner_ref=None, node_name=GPU_B))
    cluster = FakeCluster(nodes, pods, on_evict=bare_pod_lands_on_the_next_node)
    code, out, err = execute(cluster, "--delete-emptydir-data")
    assert code == EXIT_PREFLIGHT
    assert cluster.evicted() == ["apps/web-1"]
    assert f"node/{GPU_B} refused, nothing will be evicted there:" in err
    assert "pod default/late does not tolerate" in err


def test_a_node_that_cannot_be_read_again_is_reported_not_started():
    nodes, pods = seed_like()
    cluster = FakeCluster(nodes, pods)
    real_get_node = cluster.get_node

    def get_node(name):
        if name == GPU_B:
            raise ConnectionFailed("cannot reach the API server")
        return real_get_node(name)
    cluster.get_node = get_node
    code, out, err = execute(cluster, "--delete-emptydir-data")
    assert code == EXIT_INCOMPLETE
    assert sorted(cluster.evicted()) == ["apps/web-1"]
    assert "not started: cannot reach the API server" in out
