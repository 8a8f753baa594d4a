"""The only package that talks to the API server.

It owns: turning the selected kubeconfig context into a TLS connection and
credentials, JSON requests with bounded retries for safe calls, paginated
lists, resourceVersion-guarded node patches, evictions, watches, Events on pods and the
guard's admission policy (``policies``, a mixin of ``Kube``).  Objects
stay plain JSON dicts: decoding tens of thousands of pods into client model
objects is what makes Python tools slow at scale.

The ``kubernetes`` package is imported lazily, only for what it does better
than a few lines here: legacy ``auth-provider`` plugins.  Everything else
(client certificates, tokens, basic auth, exec plugins, the in-cluster service
account, impersonation with several groups) is handled here so that a plain
``status`` does not pay the client's import cost.

Layers, each using only the ones before it: ``config`` (finding and merging
kubeconfig files, the in-cluster config), ``rules`` (kubectl's global flags over the
selected cluster and user, and client-go's validation), ``x509`` (certificate dates),
``exec_plugin`` (exec credential plugins as client-go runs them), ``auth`` (the one
Credentials interface: kubeconfig user, auth-provider, in-cluster; impersonation; TLS),
``proxy`` (the proxy as Go chooses it), ``retry`` (the one Backoff and its instances),
``trace`` (-v logs, the server's warnings), ``transport`` (requests, retries, error
mapping, pagination), ``api`` (``Kube``,
which has a Transport and offers only the calls below, and ``connect``), then
``nodes`` (finding the GPU nodes, writing their taints) and ``gather`` (the
facts the planner needs), which use only ``api``'s calls.

May import: core, errors (and urllib3; ``kubernetes`` lazily).
"""

from typing import (
    Any,
    Callable,
    Dict,
    FrozenSet,
    Iterator,
    List,
    Optional,
    Protocol,
    Tuple,
    runtime_checkable,
)

from ..core.dryrun import DryRun
from .api import Kube, connect

Obj = Dict[str, Any]                      # an API object as the server's JSON decodes


@runtime_checkable
class KubeApi(Protocol):
    """What commands, the engine and completion may ask of the cluster.  ``Kube`` is the real
    one; test fakes are checked against this (tests/unit/kube/test_kube_protocol.py)."""

    def list_nodes(self, selector: Optional[str] = None, *, limit: Optional[int] = None,
                   retry: bool = True) -> List[Obj]: ...

    def list_nodes_with_version(self, selector: Optional[str] = None) -> Tuple[List[Obj], str]: ...

    def get_node(self, name: str) -> Obj: ...

    def update_node_taints(self, name: str,
                           compute: Callable[[List[Obj]], Tuple[Optional[List[Obj]], str]], *,
                           dry_run: DryRun, attempts: int = 8) -> Tuple[Obj, str]: ...

    def list_pods_on_node(self, node_name: str,
                          not_older_than: Optional[str] = None) -> List[Obj]: ...

    def list_pods_on_node_with_version(self, node_name: str, not_older_than: Optional[str] = None
                                       ) -> Tuple[List[Obj], str]: ...

    def get_pod(self, namespace: str, name: str) -> Obj: ...

    def list_pod_requests(self, node_name: Optional[str] = None) -> List[Obj]: ...

    def list_unscheduled_pods(self) -> List[Obj]: ...

    def list_pdbs(self) -> List[Obj]: ...

    def list_runtime_classes(self) -> Dict[str, str]: ...

    def list_pdbs_with_version(self) -> Tuple[List[Obj], str]: ...

    def daemonset_exists(self, namespace: str, name: str) -> bool: ...

    def list_daemonset_keys(self, at_most: int) -> Optional[FrozenSet[Tuple[str, str]]]: ...

    def get_controller(self, namespace: str, kind: str, name: str) -> Optional[Obj]: ...

    def list_template_pins(self, kind: str,
                           at_most: Optional[int] = None) -> Optional[Dict[Tuple[str, str], str]]: ...

    def get_pvc(self, namespace: str, name: str) -> Optional[Obj]: ...

    def get_pv(self, name: str) -> Optional[Obj]: ...

    def get_resource_claim(self, namespace: str, name: str) -> Optional[Obj]: ...

    def server_version(self) -> str: ...

    def can_i(self, verb: str, resource: str, *, group: str = "", subresource: str = "",
              namespace: str = "", name: str = "") -> Optional[bool]: ...

    def evict(self, namespace: str, name: str, uid: str, *, grace_period: Optional[int],
              dry_run: DryRun, resource_version: Optional[str] = None) -> None: ...

    def watch_pods_on_node(self, node_name: str, resource_version: str,
                           timeout_seconds: float) -> Iterator[Tuple[str, Obj]]: ...

    def watch_pdbs(self, resource_version: str,
                   timeout_seconds: float) -> Iterator[Tuple[str, Obj]]: ...

    def create_event(self, namespace: str, involved: Obj, reason: str, message: str,
                     type_: str) -> None: ...

    def pause(self, seconds: float) -> None: ...

    # the guard's (kube/policies.py)
    def get_admission_object(self, kind: str, name: str) -> Optional[Obj]: ...

    def apply_admission_object(self, obj: Obj, *, dry_run: DryRun) -> Obj: ...

    def list_admission_objects(self, kind: str, label_selector: str) -> List[Obj]: ...

    def delete_admission_object(self, kind: str, name: str, uid: str, *, dry_run: DryRun) -> None: ...

    def list_namespace_names(self) -> List[str]: ...


__all__ = ["Kube", "KubeApi", "Obj", "connect"]
