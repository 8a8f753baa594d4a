"""The only package that talks to the API server.

It owns: turning the selected kubeconfig context into a TLS connection and
credentials, JSON requests with bounded retries for safe calls, paginated
lists, resourceVersion-guarded node patches, evictions and watches.  Objects
stay plain JSON dicts: decoding tens of thousands of pods into client model
objects is what makes Python tools slow at scale.

The ``kubernetes`` package is imported lazily, only for what it does better
than a few lines here: legacy ``auth-provider`` plugins and the in-cluster
service-account configuration.  Everything else (client certificates, tokens,
basic auth, exec plugins, impersonation with several groups) is handled here
so that a plain ``status`` does not pay the client's import cost.

Layers, each using only the ones before it: ``config`` (finding and merging
kubeconfig files), ``x509`` (certificate dates), ``auth`` (the kubeconfig user
and TLS), ``retry`` (backoff), ``transport`` (requests, retries, error mapping,
pagination), ``api`` (the calls the commands make, and ``connect``), then
``nodes`` (finding the GPU nodes, writing their taints) and ``gather`` (the
facts the planner needs), which use only ``api``'s calls.
"""

from .api import Kube, connect

__all__ = ["Kube", "connect"]
