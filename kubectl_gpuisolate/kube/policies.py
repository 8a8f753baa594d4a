"""What the guard asks of the API server: its ValidatingAdmissionPolicy and binding
(``admissionregistration.k8s.io/v1``), written by server-side apply under the plugin's field
manager, read back, listed and deleted by the guard's labels; and the namespaces.

A mixin of ``Kube`` (kube/api.py), on its Transport: every write takes the one dry-run value.
"""

from typing import Any, Dict, List, Optional

from ..core.dryrun import DryRun
from ..core.guard import API_VERSION, PLURALS
from ..errors import ApiNotFound

Obj = Dict[str, Any]
ADMISSION = f"/apis/{API_VERSION}"
APPLY = "application/apply-patch+yaml"     # a JSON body is YAML


def _path(kind: str, name: str = "") -> str:
    return f"{ADMISSION}/{PLURALS[kind]}" + (f"/{name}" if name else "")


class AdmissionPolicies:
    """The guard's calls; ``_transport`` and ``field_manager`` are Kube's."""

    _transport: Any
    field_manager: str

    def get_admission_object(self, kind: str, name: str) -> Optional[Obj]:
        """The policy or binding ``name``, or None when there is none."""
        try:
            return self._transport.get(_path(kind, name), what=f"reading {kind} {name}")
        except ApiNotFound:
            return None

    def apply_admission_object(self, obj: Obj, *, dry_run: DryRun) -> Obj:
        """Server-side apply (force: the plugin owns these objects); the object as written."""
        kind, name = obj["kind"], obj["metadata"]["name"]
        if dry_run is DryRun.CLIENT:
            return obj
        params = {"fieldManager": self.field_manager, "force": "true"}
        if dry_run is DryRun.SERVER:
            params["dryRun"] = "All"
        return self._transport.request("PATCH", _path(kind, name), params=params, body=obj,
                                       content_type=APPLY, retry=True,
                                       what=f"applying {kind} {name}").json()

    def list_admission_objects(self, kind: str, label_selector: str) -> List[Obj]:
        return self._transport.list_all(_path(kind), {"labelSelector": label_selector},
                                        what=f"listing {PLURALS[kind]}")[0]

    def delete_admission_object(self, kind: str, name: str, uid: str, *, dry_run: DryRun) -> None:
        """Deletes it if it is still the object listed (a UID precondition); gone already is fine."""
        if dry_run is DryRun.CLIENT:
            return
        body: Obj = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}
        params = None
        if dry_run is DryRun.SERVER:
            body["dryRun"], params = ["All"], {"dryRun": "All"}
        try:
            self._transport.request("DELETE", _path(kind, name), params=params, body=body,
                                    content_type="application/json", retry=True,
                                    what=f"deleting {kind} {name}")
        except ApiNotFound:
            pass

    def list_namespace_names(self) -> List[str]:
        return [n["metadata"]["name"] for n in
                self._transport.list_all("/api/v1/namespaces", what="listing namespaces",
                                         keep=lambda n: {"metadata": {"name": n["metadata"]["name"]}})[0]]
