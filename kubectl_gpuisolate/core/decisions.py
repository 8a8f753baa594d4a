"""What the planner decides (core/planner.py): a ``PodDecision`` per pod, with its action, reason
code and sentence, and a ``NodePlan`` per GPU node holding them.  Pure data, and the counts and
subsets that status and evacuate read of it."""

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from . import gpu
from .disruption import PdbState
from .gpu import Obj

MOVE = "move"          # does not tolerate the GPU taint: evict it
STAY = "stay"          # never evicted, for the reason given
BLOCKED = "blocked"    # would move, but a gate (flag or PDB misconfiguration) stops the node
WAIT = "wait"          # already terminating: wait for it, never evict again

# Stays that status counts as misplaced: the pod does not belong here, but cannot go.
MISPLACED_STAYS = frozenset({"nowhere-to-land"})
# Stays that status counts as isolation leaks: the taint lets the pod in, yet it uses no GPU.
LEAKS = frozenset({"tolerates-without-gpu", "tolerates-everything"})


@dataclass(frozen=True)
class PodDecision:
    namespace: str
    name: str
    uid: str
    action: str
    reason: str                  # a stable code, e.g. "daemonset", "not-tolerated"
    message: str                 # a sentence for people
    owner: str = ""              # Kind/name of the controller, "" for a bare pod
    flags: Tuple[str, ...] = ()  # the flags that would lift a BLOCKED gate
    pdbs: Tuple[PdbState, ...] = ()
    warning: str = ""            # e.g. a GPU pod that does not tolerate the taint
    landing: Tuple[str, ...] = ()  # MOVE: the nodes its replacement could land on, when known
    owner_uid: str = ""          # the controller's UID: its replacement carries it too
    resource_version: str = ""   # the pod's, as planned: its eviction's precondition

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def misplaced(self) -> bool:
        """It does not belong on the node: it would move (gated or not) or has nowhere to go."""
        return self.action in (MOVE, BLOCKED) or self.reason in MISPLACED_STAYS

    @property
    def leak(self) -> bool:
        """It stays only because it tolerates the GPU taint, and uses no GPU."""
        return self.action == STAY and self.reason in LEAKS


@dataclass
class NodePlan:
    name: str
    gpu_count: int
    gpu_taints: List[Obj]        # the managed taint(s) actually on the node
    unschedulable: bool
    signal: gpu.NodeSignal = gpu.NONE   # why the node is a GPU node (core.gpu.NODE_RULES)
    maintenance: Tuple[str, ...] = ()   # who else is draining it (core.maintenance); evacuate refuses
    decisions: List[PodDecision] = field(default_factory=list)

    @property
    def tainted(self) -> bool:
        return bool(self.gpu_taints)

    def with_action(self, action: str) -> List[PodDecision]:
        return [d for d in self.decisions if d.action == action]

    @property
    def to_move(self) -> List[PodDecision]:
        return self.with_action(MOVE)

    @property
    def blocked(self) -> List[PodDecision]:
        return self.with_action(BLOCKED)

    @property
    def misplaced(self) -> List[PodDecision]:
        """Pods that do not belong on the node, gated or not, or with nowhere else to go."""
        return [d for d in self.decisions if d.misplaced]

    @property
    def leaks(self) -> List[PodDecision]:
        """Pods the taint lets in that use no GPU (status --strict counts them)."""
        return [d for d in self.decisions if d.leak]

    @property
    def movable(self) -> List[PodDecision]:
        """Pods that do not belong on the node and can go: evacuate's to-do, gated or not."""
        return [d for d in self.decisions if d.action in (MOVE, BLOCKED)]

    @property
    def settled(self) -> Dict[Tuple[str, str], PodDecision]:
        """By (namespace, name), the decisions the landing check cannot change: only the last rules
        and gated_or_move read it, for a pod with a controller no earlier rule kept."""
        return {(d.namespace, d.name): d for d in self.decisions
                if not (d.owner and d.action in (MOVE, BLOCKED))}

    @property
    def stay_reasons(self) -> "Counter[str]":
        """How many pods stay, by reason: the one count status and evacuate print."""
        return Counter(d.reason for d in self.with_action(STAY))

    @property
    def warnings(self) -> List[str]:
        return [d.warning for d in self.decisions if d.warning]
