"""Kube.create_event on a recording transport: the core/v1 Event it POSTs (the legacy form the
API server validates without eventTime, checked against a real one in tests/e2e/test_events.py),
sent once, and its failure raised to the caller as the transport's error type."""

import re

import pytest

from kubectl_gpuisolate.errors import Forbidden, api_error
from kubectl_gpuisolate.kube.api import Kube


class Recording:
    def __init__(self, error=None):
        self.calls, self.error = [], error

    def request(self, method, path, **kw):
        self.calls.append((method, path, kw))
        if self.error:
            raise self.error


def test_the_event_names_the_pod_and_the_plugin_and_is_sent_once():
    transport = Recording()
    Kube(transport).create_event("apps", {"name": "web-1", "uid": "u-1"}, "GpuIsolateEvicted",
                                 "Evicted from GPU node gpu-1", "Normal")
    [(method, path, kw)] = transport.calls
    assert (method, path) == ("POST", "/api/v1/namespaces/apps/events")
    assert kw["retry"] is False and kw["content_type"] == "application/json"
    assert kw["what"] == "writing an event on pod apps/web-1"
    body = dict(kw["body"])
    stamps = {body.pop("firstTimestamp"), body.pop("lastTimestamp")}
    assert len(stamps) == 1 and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamps.pop())
    assert body == {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": "web-1.", "namespace": "apps"},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": "apps", "name": "web-1",
                           "uid": "u-1"},
        "reason": "GpuIsolateEvicted", "message": "Evicted from GPU node gpu-1", "type": "Normal",
        "source": {"component": "kubectl-gpuisolate"}, "reportingComponent": "kubectl-gpuisolate",
        "count": 1}


def test_a_refusal_is_raised_as_its_type():
    transport = Recording(api_error("events is forbidden", status=403))
    with pytest.raises(Forbidden):
        Kube(transport).create_event("apps", {"name": "web-1", "uid": "u-1"}, "R", "m", "Warning")
    assert len(transport.calls) == 1
