"""A minimal Kubernetes API client on the standard library (http.client + ssl).

Only what the sandbox needs: JSON requests with a client certificate, one
keep-alive connection per thread, and an error type carrying the HTTP status.
"""
import http.client
import json
import ssl
import threading
import time
import urllib.parse

GROUPS = {  # plural -> API prefix
    "namespaces": "/api/v1", "nodes": "/api/v1", "pods": "/api/v1",
    "services": "/api/v1", "configmaps": "/api/v1", "serviceaccounts": "/api/v1",
    "persistentvolumes": "/api/v1", "persistentvolumeclaims": "/api/v1",
    "deployments": "/apis/apps/v1", "replicasets": "/apis/apps/v1",
    "statefulsets": "/apis/apps/v1", "daemonsets": "/apis/apps/v1",
    "controllerrevisions": "/apis/apps/v1",
    "jobs": "/apis/batch/v1", "cronjobs": "/apis/batch/v1",
    "poddisruptionbudgets": "/apis/policy/v1",
    "clusterroles": "/apis/rbac.authorization.k8s.io/v1",
    "clusterrolebindings": "/apis/rbac.authorization.k8s.io/v1",
    "leases": "/apis/coordination.k8s.io/v1",
}
CLUSTER_SCOPED = {"namespaces", "nodes", "clusterroles", "clusterrolebindings", "persistentvolumes"}
PLURAL = {"Namespace": "namespaces", "Node": "nodes", "Pod": "pods",
          "Deployment": "deployments", "ReplicaSet": "replicasets",
          "StatefulSet": "statefulsets", "DaemonSet": "daemonsets", "Job": "jobs",
          "PodDisruptionBudget": "poddisruptionbudgets", "Service": "services",
          "ConfigMap": "configmaps", "ClusterRoleBinding": "clusterrolebindings",
          "PersistentVolume": "persistentvolumes", "PersistentVolumeClaim": "persistentvolumeclaims"}


class ApiError(Exception):
    def __init__(self, status, body):
        self.status = status
        self.body = body if isinstance(body, dict) else {}
        msg = self.body.get("message") or str(body)[:300]
        super().__init__(f"HTTP {status}: {msg}")


def path(plural, namespace=None, name=None, sub=None, **query):
    """URL path of a resource collection or object."""
    parts = [GROUPS[plural]]
    if namespace and plural not in CLUSTER_SCOPED:
        parts += ["namespaces", namespace]
    parts.append(plural)
    if name:
        parts.append(name)
    if sub:
        parts.append(sub)
    p = "/".join(parts)
    q = {k: v for k, v in query.items() if v is not None}
    if q:
        p += "?" + urllib.parse.urlencode(q)
    return p


class Kube:
    def __init__(self, server, ca_file, cert_file, key_file, timeout=60):
        u = urllib.parse.urlsplit(server)
        self.host, self.port = u.hostname, u.port or 443
        self.timeout = timeout
        self.ctx = ssl.create_default_context(cafile=ca_file)
        self.ctx.load_cert_chain(cert_file, key_file)
        self._local = threading.local()

    def _conn(self, fresh=False):
        c = getattr(self._local, "conn", None)
        if c is None or fresh:
            if c is not None:
                c.close()
            c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                            timeout=self.timeout)
            self._local.conn = c
        return c

    def close(self):
        c = getattr(self._local, "conn", None)
        if c is not None:
            c.close()
            self._local.conn = None

    def request(self, method, url, body=None, content_type="application/json", raw=False):
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers["Content-Type"] = content_type
        for attempt in range(3):
            conn = self._conn(fresh=attempt > 0)
            try:
                conn.request(method, url, body=data, headers=headers)
                resp = conn.getresponse()
                payload = resp.read()
                break
            except (http.client.HTTPException, ConnectionError, TimeoutError, OSError):
                if attempt == 2:
                    raise
                time.sleep(0.2 * (attempt + 1))
        if raw:
            return resp.status, payload
        try:
            obj = json.loads(payload) if payload else {}
        except ValueError:
            obj = {"message": payload.decode(errors="replace")[:300]}
        if resp.status >= 400:
            raise ApiError(resp.status, obj)
        return obj

    # Convenience wrappers -------------------------------------------------
    def get(self, plural, name=None, namespace=None, **query):
        return self.request("GET", path(plural, namespace, name, **query))

    def get_or_none(self, plural, name, namespace=None):
        try:
            return self.get(plural, name, namespace)
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def list(self, plural, namespace=None, **query):
        """All items of a collection, following continue tokens."""
        items, cont = [], None
        query.setdefault("limit", 2000)
        while True:
            out = self.get(plural, None, namespace, **query, **({"continue": cont} if cont else {}))
            items.extend(out.get("items", []))
            cont = out.get("metadata", {}).get("continue")
            if not cont:
                return items

    def create(self, obj, namespace=None, exist_ok=False):
        plural = PLURAL[obj["kind"]]
        ns = namespace or obj.get("metadata", {}).get("namespace")
        try:
            return self.request("POST", path(plural, ns), obj)
        except ApiError as e:
            if exist_ok and e.status == 409:
                return None
            raise

    def patch(self, plural, name, patch, namespace=None, kind="merge", sub=None):
        ctype = {"merge": "application/merge-patch+json",
                 "strategic": "application/strategic-merge-patch+json",
                 "json": "application/json-patch+json"}[kind]
        return self.request("PATCH", path(plural, namespace, name, sub), patch, ctype)

    def delete(self, plural, name=None, namespace=None, missing_ok=True, **query):
        try:
            return self.request("DELETE", path(plural, namespace, name, **query))
        except ApiError as e:
            if missing_ok and e.status == 404:
                return None
            raise
