"""One evacuation across nodes: find them, taint first if asked, plan, check, then evacuate
node by node (or several at once), re-planning each node just before its turn.

It returns one ``NodeResult`` per node and prints no data: the summary is the command's
(``output.evacuate``).  Progress, warnings and the preflight report go to stderr as they
happen; so do --taint's lines, to ``out``, as the taint command prints them."""

import enum
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Optional, Set

from ..core import maintenance, managers, planner
from ..core.dryrun import DryRun
from ..core.noexecute import fence_for
from ..core.taints import ALREADY_TAINTED, gpu_taints_on
from ..errors import AuthError, GpuIsolateError
from ..kube.gather import build_plans
from ..kube.nodes import apply_taint, find_nodes_and_view
from ..output import tables as output
from ..output.evacuate import report_pdbs, report_refusal, report_unschedulable
from ..output.taint import TaintChange, render_change
from .audit import Audit
from .budgets import BudgetWatch
from .engine import Evictor
from .fit import check_fit
from .plan import preflight, targets_for
from .replacements import ReplacementWatch
from .seal import Seal, already_noexecute_warnings, needs_seal, not_sealed, plan_options_for, seal, seal_mode
from .settings import Settings
from .state import NOT_STARTED, TERMINATING, WOULD_EVICT, Clock, Halt, Outcome

# What evicting needs beyond reading: the eviction itself, and reading a pod after a 409.
EVICTION_RIGHTS = (("create", "pods", "eviction"), ("get", "pods", ""))


class NothingToDo(Exception):
    """The cluster already does what evacuate would (GKE Autopilot): the message says so."""


class NodeState(enum.Enum):
    """How one node ended (the values appear in the summary and the json/yaml document)."""

    EVACUATED = "evacuated"       # every target moved
    INCOMPLETE = "incomplete"     # pods were pending or failed at the end (the deadline, errors)
    INTERRUPTED = "interrupted"   # stopped by a signal with pods left
    REFUSED = "refused"           # the preflight refused it: nothing evicted there
    NOT_STARTED = "not-started"   # its turn never came (interrupt, deadline) or it could not be read
    PLANNED = "planned"           # --dry-run=client: only planned
    CHECKED = "checked"           # --dry-run=server: every eviction would be accepted


def check_permissions(kube, plans):
    """Refuses, before any eviction, when the user may not evict (or read) pods in a namespace
    of the plan: one line naming the verb and the resource instead of one failure per pod.
    Asks cluster-wide first, then per namespace; an answer the server cannot give is no refusal."""
    namespaces = sorted({t.namespace for p in plans for t in targets_for(p) if not t.terminating})
    for verb, resource, sub in EVICTION_RIGHTS if namespaces else ():
        if kube.can_i(verb, resource, subresource=sub) is not False:
            continue
        for namespace in namespaces:
            if kube.can_i(verb, resource, subresource=sub, namespace=namespace) is False:
                name = f"{resource}/{sub}" if sub else resource
                raise AuthError(f'cannot {verb} resource "{name}" in namespace "{namespace}", so '
                                "nothing was evicted; grant it (rbac/clusterrole.yaml lists what the "
                                "plugin needs) or use another context")


@dataclass
class NodeResult:
    name: str
    plan: Optional[planner.NodePlan]
    state: NodeState
    outcomes: List[Outcome] = field(default_factory=list)
    refusal: List[str] = field(default_factory=list)
    arrivals: list = field(default_factory=list)     # planner decisions of newcomers
    seconds: float = 0.0
    seal: Optional[Seal] = None      # evacuate --taint-first with a NoExecute taint: fence, then seal
    unschedulable: list = field(default_factory=list)   # replacements.Replacement of its pods

    @property
    def not_moved(self):
        return [o for o in self.outcomes if not o.done]

    @property
    def refused(self):
        return self.state is NodeState.REFUSED

    @property
    def planned_only(self):
        """No eviction ran here: the node was only planned (client dry run) or refused."""
        return self.state in (NodeState.PLANNED, NodeState.REFUSED) and not self.outcomes


def _not_started(plan, why):
    return NodeResult(plan.name, plan, NodeState.NOT_STARTED, outcomes=[
        Outcome(t, NOT_STARTED, f"not started: {why}") for t in targets_for(plan)])


def _refused(check):
    return NodeResult(check.plan.name, check.plan, NodeState.REFUSED, refusal=check.refusal)


def _taint_first(kube, nodes, settings, stream):
    """Taints the nodes that carry no GPU taint yet (any value of the key and effect counts).
    With a NoExecute GPU taint it writes the NoSchedule fence instead (seal.py); returns
    (the nodes as updated, the names of the nodes it wrote)."""
    taint = fence_for(settings.gpu_taint) if seal_mode(settings) else settings.gpu_taint
    todo = [n for n in nodes
            if not gpu_taints_on((n.get("spec") or {}).get("taints"), settings.gpu_taint)
            and not gpu_taints_on((n.get("spec") or {}).get("taints"), taint)]
    for node in nodes:
        if node not in todo:
            stream.write(render_change(TaintChange(node["metadata"]["name"], ALREADY_TAINTED,
                                                   settings.dry_run)))
    updated = {}
    for node, verb in apply_taint(kube, todo, taint, overwrite=False, dry_run=settings.dry_run):
        name = node["metadata"]["name"]
        stream.write(render_change(TaintChange(name, verb, settings.dry_run)))
        updated[name] = node
    return [updated.get(n["metadata"]["name"], n) for n in nodes], set(updated)


def build_node_plans(kube, nodes, settings, warn, run, cluster_nodes):
    """build_plans, each node planned against its fence while it is only fenced (seal.py)."""
    groups: dict = {}
    for node in nodes:
        groups.setdefault(plan_options_for(node, settings), []).append(node)
    plans = {}
    for plan_options, group in groups.items():
        for node, plan in zip(group, build_plans(kube, group, plan_options, landing_check=True,
                                                 warn=warn, run=run,
                                                 cluster_nodes=cluster_nodes)):
            plans[node["metadata"]["name"]] = plan
    return [plans[n["metadata"]["name"]] for n in nodes]


class Evacuation:
    """One evacuation: the nodes one at a time (or --parallel-nodes at once).

    ``out`` takes --taint's lines only; ``err`` the progress.  The deadline (--timeout)
    counts from here; ``stop`` is the interrupt: once set, no new eviction starts."""

    def __init__(self, kube, settings: Settings, *, out, err, clock=None, stop=None, **engine_args):
        self.kube, self.settings = kube, settings
        self.out, self.err = out, err
        clock = clock or Clock()
        self.halt = Halt(clock, stop, clock.now() + settings.timeout if settings.timeout else None)
        self.progress = output.Progress(err)
        self.engine_args = engine_args
        self.audit = Audit(kube, enabled=settings.dry_run is DryRun.NONE,   # no events in dry runs
                           warn=lambda message: output.warn(message, err))
        # What _prepare finds: the cluster's nodes (for every landing check), the nodes this
        # run fenced first, and the names of the run's nodes.
        self.cluster_nodes: Optional[List[Dict[str, Any]]] = None
        self.fenced: Set[str] = set()
        self.run_names: FrozenSet[str] = frozenset()

    def run(self):
        """Returns one NodeResult per node, in the order the nodes were found."""
        nodes, checks = self._prepare()
        before = check_fit(self.kube, [c.plan for c in checks if c.ok], self.settings, self.err,
                           self.cluster_nodes)
        if self.settings.dry_run is DryRun.CLIENT:
            return [self._sealed(node, NodeResult(c.plan.name, c.plan, NodeState.PLANNED))
                    if c.ok else _refused(c) for node, c in zip(nodes, checks)]
        # Only real evictions wait for a budget (a dry run's refusal is final).
        budgets = BudgetWatch(self.kube, self.halt) \
            if self.settings.dry_run is DryRun.NONE else None
        evictor = Evictor(self.kube, halt=self.halt, dry_run=self.settings.dry_run,
                          grace_period=self.settings.grace_period, max_parallel=self.settings.max_parallel,
                          progress=self.progress, audit=self.audit,
                          **{"budgets": budgets, **self.engine_args})
        try:
            results = self._run_nodes(evictor, nodes, checks)
            self.audit.refused(r.plan for r in results if r.refused)
        finally:
            evictor.close()
            self.audit.close()
        if self.halt.stop.is_set():
            self.progress("interrupted: no new evictions were started")
        elif self.settings.dry_run is DryRun.NONE:
            self._settle(results, before)
        return results

    def _settle(self, results, before):
        """The moved pods' replacements, watched for a settle window (replacements.py); the
        Unschedulable ones are warned of and kept on their node's result."""
        found = ReplacementWatch(self.kube, self.halt, before=before, say=self.progress).run(results)
        report_unschedulable(found, self.err)
        for result in results:
            result.unschedulable = [r for r in found if r.node == result.name]

    def _warn(self, message):
        output.warn(message, self.err)

    def _prepare(self):
        """Finds the nodes, taints them first if asked, plans and checks them, and reports
        the refusals and the PDBs that will hold pods back; returns (nodes, checks)."""
        settings, err = self.settings, self.err
        # The cluster's nodes, when listed, also serve every landing check of the run.
        nodes, _, _, self.cluster_nodes = find_nodes_and_view(
            self.kube, settings.names, settings.requirements, settings.selector_text, warn=self._warn)
        if any(managers.is_autopilot(node) for node in nodes):
            raise NothingToDo(managers.AUTOPILOT_NOTE)
        if seal_mode(settings):
            self.progress(f"{settings.gpu_taint} deletes the pods that do not tolerate it: fencing "
                          f"with {fence_for(settings.gpu_taint)} first, NoExecute goes on only where "
                          "no pod left would be deleted")
        if settings.taint_first:
            # A node in someone else's maintenance is refused by the preflight: never write to it.
            free = [n for n in nodes if not maintenance.maintenance(n)]
            tainted, self.fenced = _taint_first(self.kube, free, settings,
                                                err if settings.taint_lines_to_err else self.out)
            written = {n["metadata"]["name"]: n for n in tainted}
            nodes = [written.get(n["metadata"]["name"], n) for n in nodes]
        self.run_names = frozenset(n["metadata"]["name"] for n in nodes)
        plans = build_node_plans(self.kube, nodes, settings, self._warn, self.run_names,
                                 self.cluster_nodes)
        for warning in [w for p in plans for w in p.warnings] + \
                already_noexecute_warnings(self.kube, nodes, settings):
            output.warn(warning, err)
        checks = [preflight(p, settings) for p in plans]
        if settings.dry_run is not DryRun.CLIENT:
            check_permissions(self.kube, [c.plan for c in checks if c.ok])
        for check in checks:
            if not check.ok:
                report_refusal(check, err)
        report_pdbs(checks, settings, err)
        return nodes, checks

    def _run_nodes(self, evictor, nodes, checks):
        jobs = list(zip(nodes, checks))
        if self.settings.parallel_nodes == 1 or len(jobs) == 1:
            return [self._node(evictor, node, check) for node, check in jobs]
        with ThreadPoolExecutor(max_workers=self.settings.parallel_nodes,
                                thread_name_prefix="node") as pool:
            futures = [pool.submit(self._node, evictor, node, check) for node, check in jobs]
            return [f.result() for f in futures]

    def _node(self, evictor, node, check):
        plan = check.plan
        if not check.ok:
            return _refused(check)
        if self.halt.halted():
            why = "interrupted" if self.halt.stop.is_set() else "the deadline passed"
            return self._sealed(node, _not_started(plan, f"{why} before this node"))
        started = self.halt.clock.now()
        known = {d.uid for d in plan.decisions}
        real = self.settings.dry_run is DryRun.NONE
        if real:
            try:
                node, check = self._replan(plan.name)
            except GpuIsolateError as exc:
                self.progress(f"node/{plan.name}: not started: {exc}")
                return _not_started(plan, str(exc))
            plan = check.plan
            known |= {d.uid for d in plan.decisions}
            if not check.ok:
                report_refusal(check, self.err)
                return _refused(check)
        outcomes = self._evacuate(evictor, plan)
        arrivals = self._arrivals(node, known) if real and not self.halt.stop.is_set() else []
        result = self._classify_result(plan, outcomes, arrivals, self.halt.clock.now() - started)
        return self._sealed(node, result)

    def _sealed(self, node, result):
        """Seal mode: once the node is evacuated, the NoExecute taint (seal.py)."""
        if not needs_seal(node, self.settings):
            return result
        if result.state not in (NodeState.EVACUATED, NodeState.CHECKED, NodeState.PLANNED):
            why = "its turn never came" if result.state is NodeState.NOT_STARTED else \
                "pods were left on the node"
            result.seal = not_sealed(self.settings, why)
            return result
        leaving = frozenset() if self.settings.dry_run is DryRun.NONE else \
            frozenset(t.uid for t in targets_for(result.plan))
        try:
            result.seal = seal(self.kube, result.name, self.settings, leaving=leaving,
                               fence_added=result.name in self.fenced, progress=self.progress)
        except GpuIsolateError as exc:
            self.progress(f"node/{result.name}: {exc}")
            result.seal = not_sealed(self.settings, str(exc))
        return result

    def _replan(self, name):
        """A fresh read of the node and its pods, checked again: it may have waited its turn."""
        node = self.kube.get_node(name)
        plan = build_plans(self.kube, [node], plan_options_for(node, self.settings),
                           landing_check=True, warn=self._warn, run=self.run_names,
                           cluster_nodes=self.cluster_nodes)[0]
        return node, preflight(plan, self.settings)

    def _evacuate(self, evictor, plan):
        """Evicts the node's MOVE pods and waits for its terminating ones; returns the outcomes."""
        if plan.unschedulable:
            self.progress(f"node/{plan.name} is cordoned, not by evacuate; "
                          "leaving the cordon as it is")
        targets = targets_for(plan)
        self.progress(f"node/{plan.name}: {len(plan.to_move)} pod(s) to evict, "
                      f"{sum(1 for t in targets if t.terminating)} terminating, "
                      f"{sum(plan.stay_reasons.values())} stay")
        self.audit.planned(plan)
        outcomes = evictor.evacuate_node(plan.name, targets)
        self.audit.node_done(plan, outcomes)
        if self.settings.dry_run is not DryRun.NONE:
            # A dry run waits for nothing: a pod already terminating would be gone anyway.
            outcomes = [Outcome(o.target, WOULD_EVICT) if o.state == TERMINATING else o
                        for o in outcomes]
        return outcomes

    def _classify_result(self, plan, outcomes, arrivals, seconds):
        """The node's state from its outcomes, said in one progress line."""
        real = self.settings.dry_run is DryRun.NONE
        if all(o.done for o in outcomes):
            state = NodeState.EVACUATED if real else NodeState.CHECKED
        else:
            state = NodeState.INTERRUPTED if self.halt.stop.is_set() else NodeState.INCOMPLETE
        moved = sum(1 for o in outcomes if o.done)
        self.progress(f"node/{plan.name}: {state.value}, {moved} {'moved' if real else 'would move'}, "
                      f"{len(outcomes) - moved} left ({seconds:.1f}s)")
        return NodeResult(plan.name, plan, state, outcomes=outcomes, arrivals=arrivals,
                          seconds=seconds)

    def _arrivals(self, node, known):
        """Pods bound to the node during the run (e.g. bare pods with spec.nodeName set)."""
        name = node["metadata"]["name"]
        try:
            pods = self.kube.list_pods_on_node(name)
        except GpuIsolateError as exc:
            output.warn(f"could not list node/{name} again to look for pods that arrived during "
                        f"the run: {exc}", self.err)
            return []
        newcomers = [p for p in pods if (p.get("metadata") or {}).get("uid") not in known]
        if not newcomers:
            return []
        decisions = planner.plan_node(node, newcomers, [], self.settings.plan_options).decisions
        for d in decisions:
            if d.action in (planner.MOVE, planner.BLOCKED):
                output.warn(f"pod {d.ref} arrived on node/{name} during the run and does not "
                            "tolerate the GPU taint (a pod bound with spec.nodeName bypasses it); "
                            "run evacuate again to move it", self.err)
        return decisions
