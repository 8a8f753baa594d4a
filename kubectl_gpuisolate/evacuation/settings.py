"""What the engine is told: one frozen value, built by the evacuate command from its flags
(commands/evacuate.EvacuateOptions.settings), so that the engine reads no command options and
a field it needs is named here, typed, once."""

from dataclasses import dataclass
from typing import Optional, Tuple

from ..core import planner
from ..core.dryrun import DryRun
from ..core.taints import Taint


@dataclass(frozen=True)
class Settings:
    names: Tuple[str, ...]            # the nodes named; empty: by selector, or every GPU node
    requirements: Optional[list]      # the parsed -l; None when nodes are named or by default
    selector_text: Optional[str]      # -l as given, for messages
    gpu_taint: Taint
    taint_first: bool
    delete_emptydir_data: bool
    force: bool
    allow_job_restart: bool           # evict pods whose eviction restarts or fails a whole job
    grace_period: int                 # -1: each pod's own
    timeout: Optional[float]          # seconds; None: no deadline
    max_parallel: int                 # evictions in flight
    parallel_nodes: int
    dry_run: DryRun
    taint_lines_to_err: bool          # stdout carries -o output: the taint-first lines go to stderr

    @property
    def plan_options(self) -> planner.PlanOptions:
        return planner.PlanOptions(self.gpu_taint, delete_emptydir_data=self.delete_emptydir_data,
                                   force=self.force, allow_job_restart=self.allow_job_restart)
