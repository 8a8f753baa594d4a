"""The evacuate preflight on plain data: the taint fence, gates, multi-PDB pods,
the up-front PDB report, and which planner decisions become eviction targets."""

import io

from kubectl_gpuisolate.cli import build_parser
from kubectl_gpuisolate.commands.evacuate import EvacuateOptions
from kubectl_gpuisolate.core import planner
from kubectl_gpuisolate.evacuation.plan import preflight, targets_for
from kubectl_gpuisolate.output.evacuate import report_pdbs, report_refusal

from ..factories import GPU_A, GPU_TAINT, INFERENCE_TOLERATIONS, gpu_node, owner, pdb, pod

EMPTY_DIR = [{"name": "cache", "emptyDir": {}}]
WEB = {"matchLabels": {"app": "web"}}


def options(*argv):
    return EvacuateOptions.from_args(build_parser().parse_args(["evacuate", *argv])).settings()


def plan(pods, pdbs=(), *, taints=(GPU_TAINT,), argv=()):
    node = gpu_node(GPU_A, taints=list(taints) if taints else None)
    return planner.plan_node(node, pods, list(pdbs), options(*argv).plan_options)


def web(name, **kw):
    return pod(name, "apps", labels={"app": "web"}, **kw)


def test_a_tainted_node_with_movable_pods_passes():
    check = preflight(plan([web("w1"), pod("llama", tolerations=INFERENCE_TOLERATIONS)]), options())
    assert check.ok and check.refusal == [] and check.flags == []


def test_an_untainted_node_is_refused_with_one_line():
    check = preflight(plan([web("w1")], taints=()), options())
    assert not check.ok
    assert check.refusal == ["it lacks the GPU taint nvidia.com/gpu=true:NoSchedule, so evicted "
                             "pods could come straight back; run 'kubectl gpuisolate taint' first "
                             "or pass --taint-first"]
    stream = io.StringIO()
    report_refusal(check, stream)
    assert stream.getvalue().count("\n") == 1


def test_every_gated_pod_is_named_with_its_flag():
    pods = [web("w1"), pod("bare", owner_ref=None), pod("scratch", volumes=EMPTY_DIR),
            pod("both", owner_ref=None, volumes=EMPTY_DIR)]
    check = preflight(plan(pods), options())
    assert not check.ok
    assert check.flags == ["--delete-emptydir-data", "--force"]
    assert len(check.refusal) == 3
    stream = io.StringIO()
    report_refusal(check, stream)
    text = stream.getvalue()
    assert text.startswith(f"node/{GPU_A} refused, nothing will be evicted there:\n")
    assert "pod default/bare does not tolerate" in text and "(use --force)" in text
    assert "pod default/scratch" in text and "(use --delete-emptydir-data)" in text
    assert "(use --delete-emptydir-data and --force)" in text
    assert text.endswith("rerun with --delete-emptydir-data --force to allow these pods\n")


def test_the_flags_lift_the_gates():
    pods = [pod("bare", owner_ref=None), pod("scratch", volumes=EMPTY_DIR)]
    check = preflight(plan(pods, argv=("--force", "--delete-emptydir-data")),
                      options("--force", "--delete-emptydir-data"))
    assert check.ok


def test_a_multi_pdb_pod_refuses_the_node_naming_its_pdbs_and_no_flag_helps():
    pdbs = [pdb("web", "apps", selector=WEB), pdb("all", "apps", selector={})]
    check = preflight(plan([web("w1")], pdbs, argv=("--force",)), options("--force"))
    assert not check.ok and check.flags == []
    assert "several PodDisruptionBudgets (web, all)" in check.refusal[0]
    stream = io.StringIO()
    report_refusal(check, stream)
    assert "rerun with" not in stream.getvalue()


def test_pdbs_that_never_or_do_not_now_allow_an_eviction_are_reported_up_front():
    pdbs = [pdb("web", "apps", selector=WEB, max_unavailable=0, allowed=0, desired=2, healthy=2,
                expected=2),
            pdb("api", "apps", selector={"matchLabels": {"app": "api"}}, max_unavailable=1,
                allowed=0, desired=1, healthy=0, expected=2),
            pdb("fine", "apps", selector={"matchLabels": {"app": "fine"}}, allowed=1),
            pdb("gpu", "default", selector={"matchLabels": {"app": "llama"}}, allowed=0,
                desired=1, healthy=1, expected=1)]
    pods = [web("w1"), web("w2"), pod("a1", "apps", labels={"app": "api"}),
            pod("f1", "apps", labels={"app": "fine"}),
            pod("llama", labels={"app": "llama"}, tolerations=INFERENCE_TOLERATIONS)]
    stream = io.StringIO()
    report_pdbs([preflight(plan(pods, pdbs), options())], options(), stream)
    lines = stream.getvalue().splitlines()
    assert lines == [
        "Warning: PodDisruptionBudget apps/api allows no eviction now (needs 1 healthy, has 0): "
        "apps/a1 will wait for it, until --timeout",
        "Warning: PodDisruptionBudget apps/web can never allow an eviction (maxUnavailable is 0; "
        "needs 2 healthy, has 2): apps/w1, apps/w2 will not move; relax the PDB or scale its "
        "workload up, then run evacuate again"]


def test_targets_are_the_move_and_wait_decisions():
    pdbs = [pdb("web", "apps", selector=WEB, min_available=1, allowed=0, desired=1, healthy=1,
                expected=1)]
    pods = [web("w1"), web("w-old", deleting=True), pod("plain"),
            pod("ds", owner_ref=owner("DaemonSet", "cilium")),
            pod("done", phase="Succeeded"), pod("bare", owner_ref=None),
            pod("llama", tolerations=INFERENCE_TOLERATIONS)]
    targets = {t.name: t for t in targets_for(plan(pods, pdbs))}
    assert sorted(targets) == ["plain", "w-old", "w1"]
    assert targets["w1"].pdbs == ("web",)
    assert targets["w1"].pdb_never == "minAvailable 1 >= its 1 pod(s)"
    assert targets["w1"].uid == "uid-apps-w1"
    assert targets["w-old"].terminating and not targets["w1"].terminating
    assert targets["plain"].pdbs == () and targets["plain"].pdb_never == ""
