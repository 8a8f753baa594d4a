"""Kube.list_pod_requests and Kube.list_unscheduled_pods against a scripted pool: the field
selectors, the pages, and what is kept of each pod (requests_only)."""

import json
from urllib.parse import parse_qs, urlsplit

from kubectl_gpuisolate.core.resources import pod_requests
from kubectl_gpuisolate.kube import api, essentials

from ..factories import pod
from .test_transport import Raw, make


def page(items, token=""):
    return Raw(200, json.dumps({"items": items, "metadata": {"continue": token,
                                                             "resourceVersion": "7"}}).encode())


def query(url):
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def whole_pod():
    found = pod("web-1", "apps", requests={"cpu": "500m", "memory": "1Gi"}, limits={"cpu": "1"},
                labels={"app": "web"}, annotations={"a": "b" * 1000})
    found["spec"]["initContainers"] = [
        {"name": "proxy", "image": "envoy", "restartPolicy": "Always",
         "resources": {"requests": {"cpu": "250m"}}, "env": [{"name": "X", "value": "1"}]},
        {"name": "migrate", "image": "busybox"}]
    found["spec"]["overhead"] = {"cpu": "100m"}
    found["spec"]["volumes"] = [{"name": "v", "emptyDir": {}}]
    found["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return found


def test_pod_requests_are_one_paginated_list_of_slim_pods():
    conn, pool, _ = make([page([whole_pod()], token="next"), page([pod("db-0", node_name="cpu-1")])])
    pods = api.Kube(conn).list_pod_requests()
    first, second = (query(url) for _, url, _ in pool.sent)
    assert first["fieldSelector"] == "status.phase!=Succeeded,status.phase!=Failed"
    assert second["continue"] == "next" and second["fieldSelector"] == first["fieldSelector"]
    assert pods[0] == {
        "metadata": {"uid": "uid-apps-web-1",
                     "ownerReferences": [{"uid": "uid-web-5d4f8", "controller": True}]},
        "spec": {"nodeName": "nkpnai-gpupool-1-z9mz6-pl9k2-4n5fm", "overhead": {"cpu": "100m"},
                 "containers": [{"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
                 "initContainers": [
                     {"resources": {"requests": {"cpu": "250m"}}, "restartPolicy": "Always"},
                     {"resources": {"requests": {}}}]}}
    assert pods[1]["spec"]["nodeName"] == "cpu-1"


def test_the_slim_pod_requests_what_the_whole_pod_requests():
    whole = whole_pod()
    whole["spec"]["resources"] = {"requests": {"memory": "3Gi"}}
    assert pod_requests(essentials.requests_only(whole)) == pod_requests(whole)
    assert essentials.requests_only(pod("bare", owner_ref=None))["metadata"] == {"uid": "uid-default-bare"}


def test_unscheduled_pods_are_the_pending_pods_bound_to_no_node():
    conn, pool, _ = make([page([whole_pod()])])
    assert api.Kube(conn).list_unscheduled_pods() == [whole_pod()]
    assert query(pool.sent[0][1])["fieldSelector"] == "spec.nodeName=,status.phase=Pending"


def test_pod_requests_of_one_node_select_it_too():
    conn, pool, _ = make([page([pod("db-0", node_name="cpu-1")])])
    pods = api.Kube(conn).list_pod_requests("cpu-1")
    assert query(pool.sent[0][1])["fieldSelector"] == \
        "spec.nodeName=cpu-1,status.phase!=Succeeded,status.phase!=Failed"
    assert pods == [essentials.requests_only(pod("db-0", node_name="cpu-1"))]
