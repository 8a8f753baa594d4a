"""The kube package's pure helpers: JSON merge patch, API error mapping, small parsers."""

import base64
import json

import pytest

from kubectl_gpuisolate.errors import ApiError, ConfigError
from kubectl_gpuisolate.exits import EXIT_API, EXIT_AUTH, EXIT_CONFLICT, EXIT_NOT_FOUND
from kubectl_gpuisolate.kube import api, transport
from kubectl_gpuisolate.kube import auth as credentials

MERGE_CASES = [
    ({"a": 1}, {"a": 2}, {"a": 2}, "replace"),
    ({"a": 1}, {"b": 2}, {"a": 1, "b": 2}, "add"),
    ({"a": 1, "b": 2}, {"a": None}, {"b": 2}, "null-deletes"),
    ({"a": 1}, {"zzz": None}, {"a": 1}, "null-deletes-missing"),
    ({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}, {"a": {"c": 2, "d": 3}}, "nested"),
    ({"a": [1, 2, 3]}, {"a": [4]}, {"a": [4]}, "list-replaced"),
    ({"a": {"b": 1}}, {"a": "x"}, {"a": "x"}, "object-to-scalar"),
    ({"a": "x"}, {"a": {"b": 1, "c": None}}, {"a": {"b": 1}}, "scalar-to-object"),
    ({"a": 1}, {}, {"a": 1}, "empty-patch"),
    ({}, {"a": {"b": {"c": None}}}, {"a": {"b": {}}}, "new-nested-nulls-dropped"),
    ({"a": 1}, ["x"], ["x"], "patch-not-object"),
    ("scalar", {"a": 1}, {"a": 1}, "target-not-object"),
    ({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}], "podCIDR": "10.0.0.0/24"},
      "metadata": {"name": "n", "resourceVersion": "5"}},
     {"metadata": {"resourceVersion": "5"}, "spec": {"taints": None}},
     {"spec": {"podCIDR": "10.0.0.0/24"}, "metadata": {"name": "n", "resourceVersion": "5"}},
     "untaint-last-taint"),
    ({"spec": {"unschedulable": True}},
     {"spec": {"taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}},
     {"spec": {"unschedulable": True,
               "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}},
     "taint-node"),
]


@pytest.mark.parametrize("target, patch, expected", [c[:3] for c in MERGE_CASES],
                         ids=[c[3] for c in MERGE_CASES])
def test_merge_patch(target, patch, expected):
    snapshot = json.dumps(target, sort_keys=True)
    assert api.merge_patch(target, patch) == expected
    assert json.dumps(target, sort_keys=True) == snapshot  # the target is not modified


def status_body(message, reason, code, causes=None, **details):
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
            "reason": reason, "code": code}
    if causes is not None:
        details["causes"] = causes
    if details:
        body["details"] = details
    return json.dumps(body).encode()


FORBIDDEN = ('nodes "n1" is forbidden: User "jane" cannot patch resource "nodes" in API group "" '
             "at the cluster scope")
TERMINATING = [{"reason": "NamespaceTerminating", "message": "namespace ns is being terminated",
                "field": "metadata.namespace"}]

STATUS_CASES = [
    # (status, headers, body, exit code, message fragments, retry_after, id)
    (401, {}, status_body("Unauthorized", "Unauthorized", 401), EXIT_AUTH,
     ["Unauthorized: the server rejected the credentials while patching node n1",
      "refresh the credentials"], None, "401"),
    (401, {}, b"", EXIT_AUTH, ["Unauthorized"], None, "401-empty-body"),
    (403, {}, status_body(FORBIDDEN, "Forbidden", 403), EXIT_AUTH,
     [FORBIDDEN, "(while patching node n1; grant that permission or use another context)"],
     None, "403-message-kept"),
    (403, {}, status_body("pods \"p\" is forbidden: unable to create new content in namespace ns "
                          "because it is being terminated", "Forbidden", 403, causes=TERMINATING),
     EXIT_API, ["because it is being terminated", "(HTTP 403 while patching node n1)"], None,
     "403-namespace-terminating"),
    (404, {}, status_body('nodes "n1" not found', "NotFound", 404), EXIT_NOT_FOUND,
     ['nodes "n1" not found'], None, "404"),
    (409, {}, status_body("the object has been modified", "Conflict", 409), EXIT_CONFLICT,
     ["the object has been modified"], None, "409"),
    (429, {"Retry-After": "7"}, status_body("Too many requests", "TooManyRequests", 429),
     EXIT_API, ["Too many requests (HTTP 429 while patching node n1)"], 7, "429-retry-after"),
    (429, {}, status_body("Cannot evict pod", "TooManyRequests", 429,
                          causes=[{"reason": "DisruptionBudget",
                                   "message": "The disruption budget nai-db needs 1 healthy pods"}],
                          retryAfterSeconds=3),
     EXIT_API, ["Cannot evict pod"], 3, "429-details-retry-after"),
    (429, {"Retry-After": "soon"}, status_body("slow down", "TooManyRequests", 429), EXIT_API,
     ["slow down"], None, "429-retry-after-not-a-number"),
    (500, {}, b"upstream connect error", EXIT_API,
     ["upstream connect error (HTTP 500 while patching node n1)"], None, "500-plain-text"),
    (502, {}, b"", EXIT_API, ["HTTP 502 (HTTP 502 while patching node n1)"], None, "502-empty"),
    (503, {"Retry-After": "1"}, b"<html>" + b"x" * 500 + b"</html>", EXIT_API,
     ["<html>xxx"], 1, "503-html-truncated"),
    (422, {}, status_body('Node "n1" is invalid: spec.taints[0].effect: Unsupported value',
                          "Invalid", 422, causes=[{"reason": "FieldValueNotSupported",
                                                   "field": "spec.taints[0].effect"}]),
     EXIT_API, ['Node "n1" is invalid'], None, "422-invalid"),
]


@pytest.mark.parametrize("status, headers, body, exit_code, fragments, retry_after",
                         [c[:6] for c in STATUS_CASES], ids=[c[6] for c in STATUS_CASES])
def test_status_error(status, headers, body, exit_code, fragments, retry_after):
    err = transport.status_error(transport.Response(status, headers, body), "patching node n1")
    assert isinstance(err, ApiError)
    assert err.exit_code == exit_code
    assert err.status == status
    assert err.retry_after == retry_after
    for fragment in fragments:
        assert fragment in str(err)
    assert "\n" not in str(err)


def test_status_error_truncates_plain_bodies():
    err = transport.status_error(transport.Response(500, {}, b"y" * 1000), "listing nodes")
    assert str(err) == "y" * 200 + " (HTTP 500 while listing nodes)"


def test_status_error_reason_and_causes():
    causes = [{"reason": "DisruptionBudget", "message": "needs 1 healthy pods"}, "junk", None]
    body = status_body("Cannot evict pod", "TooManyRequests", 429, causes=causes)
    err = transport.status_error(transport.Response(429, {}, body), "evicting pod a/b")
    assert err.reason == "TooManyRequests"
    assert err.causes == ({"reason": "DisruptionBudget", "message": "needs 1 healthy pods"},)


def test_status_error_namespace_terminating_cause_kept():
    body = status_body("being terminated", "Forbidden", 403, causes=TERMINATING)
    err = transport.status_error(transport.Response(403, {}, body), "evicting pod ns/p")
    assert [c["reason"] for c in err.causes] == ["NamespaceTerminating"]
    assert err.exit_code == EXIT_API


@pytest.mark.parametrize("data, expected", [
    (b"", {}), (b"{}", {}), (b'{"items": []}', {"items": []}),
], ids=["empty", "empty-object", "object"])
def test_response_json(data, expected):
    assert transport.Response(200, {}, data).json() == expected


@pytest.mark.parametrize("text, expected", [
    ("urllib3 failed: [Errno 111] Connection refused", "connection refused"),
    ("HTTPSConnectionPool: Max retries exceeded: Read timed out.", "timed out"),
    ("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed",
     "certificate verify failed"),
    ("something: odd: happened", "happened"),
], ids=["refused", "timeout", "tls", "last-part"])
def test_short(text, expected):
    assert transport.short(Exception(text)) == expected


@pytest.mark.parametrize("text, expected", [
    ("2025-01-01T00:00:00Z", 1735689600),
    ("2025-01-01T00:00:00.123456Z", 1735689600),
    ("2025-01-01T02:30:00+02:30", 1735689600),          # 02:30 at +02:30 is midnight UTC
    ("2024-12-31T19:00:00.5-05:00", 1735689600),
    ("2025-01-01t00:00:00z", 1735689600),
    ("2025-01-01T00:00:00", None),                      # no zone: Go refuses it too
    ("2025-01-01T00:00:00+0200", None), ("2025-13-01T00:00:00Z", None),
    ("", None), (None, None), ("not a time", None),
], ids=["utc", "fraction", "east", "west", "lowercase", "no-zone", "bad-offset", "bad-month",
        "empty", "none", "garbage"])
def test_parse_rfc3339(text, expected):
    assert credentials.parse_rfc3339(text) == expected


def test_b64():
    encoded = base64.b64encode(b"-----BEGIN CERT-----").decode()
    assert credentials.b64(encoded, "x") == "-----BEGIN CERT-----"
    with pytest.raises(ConfigError) as info:
        credentials.b64("not base64!", "client-key-data")
    assert "client-key-data in kubeconfig is not valid base64" in str(info.value)
