"""errors.py's ApiError subclasses and transport.status_error/retry_after: each HTTP status
becomes its class, once, so callers catch by type."""

import json

import pytest

from kubectl_gpuisolate import errors
from kubectl_gpuisolate.errors import (
    ApiError,
    ApiNotFound,
    Conflict,
    ConflictError,
    Forbidden,
    Gone,
    NotFound,
    ServerError,
    TooManyRequests,
    Unauthorized,
)
from kubectl_gpuisolate.exits import EXIT_API, EXIT_AUTH, EXIT_CONFLICT, EXIT_NOT_FOUND
from kubectl_gpuisolate.kube import transport
from kubectl_gpuisolate.kube.transport import Response, retry_after, status_error


def answer(status, message="m", headers=None, **details):
    body = {"kind": "Status", "message": message, "reason": "R", "code": status}
    if details:
        body["details"] = details
    return Response(status, headers or {}, json.dumps(body).encode())


@pytest.mark.parametrize("status, cls, exit_code", [
    (400, ApiError, EXIT_API),
    (401, Unauthorized, EXIT_AUTH),
    (403, Forbidden, EXIT_AUTH),
    (404, ApiNotFound, EXIT_NOT_FOUND),
    (409, Conflict, EXIT_CONFLICT),
    (410, Gone, EXIT_API),
    (422, ApiError, EXIT_API),
    (429, TooManyRequests, EXIT_API),
    (500, ServerError, EXIT_API),
    (501, ServerError, EXIT_API),
    (503, ServerError, EXIT_API),
    (504, ServerError, EXIT_API),
])
def test_status_error_picks_the_class_of_the_status(status, cls, exit_code):
    err = status_error(answer(status), "reading node n1")
    assert type(err) is cls
    assert isinstance(err, ApiError)
    assert err.exit_code == exit_code
    assert (err.status, err.reason) == (status, "R")
    assert errors.api_error_class(status) is cls


def test_a_404_is_a_not_found_and_a_409_a_conflict_error():
    with pytest.raises(NotFound) as info:
        raise status_error(answer(404, 'nodes "n1" not found'), "reading node n1")
    assert info.value.status == 404 and str(info.value) == 'nodes "n1" not found'
    with pytest.raises(ConflictError) as info:
        raise status_error(answer(409, "the object has been modified"), "patching node n1")
    assert info.value.status == 409 and info.value.exit_code == EXIT_CONFLICT
    assert not isinstance(status_error(answer(410), "watching"), NotFound)
    assert not isinstance(status_error(answer(500), "x"), (NotFound, ConflictError))


def test_a_namespace_terminating_403_is_forbidden_but_not_an_rbac_error():
    """An eviction retries it (evacuation/policy.py checks the cause); exit 8, as before."""
    err = status_error(answer(403, "being terminated",
                              causes=[{"reason": "NamespaceTerminating"}]), "evicting pod ns/p")
    assert isinstance(err, Forbidden)
    assert err.has_cause("NamespaceTerminating") and not err.has_cause("DisruptionBudget")
    assert err.exit_code == EXIT_API
    assert str(err) == "being terminated (HTTP 403 while evicting pod ns/p)"
    rbac = status_error(answer(403, "forbidden"), "evicting pod ns/p")
    assert rbac.exit_code == EXIT_AUTH and not rbac.has_cause("NamespaceTerminating")


def test_api_error_keeps_its_fields_in_every_subclass():
    for status in (401, 403, 404, 409, 410, 429, 502):
        err = errors.api_error("x", status=status, reason="R", causes=[{"reason": "C"}],
                               retry_after=4)
        assert (err.status, err.reason, err.causes, err.retry_after) == (status, "R",
                                                                          ({"reason": "C"},), 4)
        assert err.has_cause("C")


@pytest.mark.parametrize("headers, details, expected", [
    ({"Retry-After": "7"}, {}, 7),
    ({"Retry-After": "7"}, {"retryAfterSeconds": 3}, 7),       # the header wins
    ({}, {"retryAfterSeconds": 3}, 3),
    ({"Retry-After": "soon"}, {"retryAfterSeconds": 2}, 2),    # an HTTP date is not read
    ({"Retry-After": "0"}, {}, None),
    ({}, {"retryAfterSeconds": 0}, None),
    ({}, {"retryAfterSeconds": "5"}, None),
    ({}, {}, None),
], ids=["header", "header-first", "details", "date-header", "zero", "zero-details",
        "string-details", "none"])
def test_retry_after(headers, details, expected):
    assert retry_after(answer(429, headers=headers, **details)) == expected


def test_retry_after_of_a_body_that_is_no_status():
    assert retry_after(Response(503, {}, b"<html>busy</html>")) is None
    assert retry_after(Response(503, {}, b"null")) is None
    assert retry_after(Response(503, {"Retry-After": "2"}, b"[]")) == 2


@pytest.mark.parametrize("exc, expected", [
    (errors.api_error("x", status=429), True),
    (errors.api_error("x", status=500), True),
    (errors.api_error("x", status=503), True),
    (errors.api_error("x", status=501), False),
    (errors.api_error("x", status=409), False),
    (errors.api_error("x", status=403), False),
    (errors.api_error("x", status=404), False),
    (errors.ConnectionFailed("reset"), True),
    (transport.TlsFailed("bad certificate"), False),
], ids=["429", "500", "503", "501", "409", "403", "404", "connection", "tls"])
def test_retryable(exc, expected):
    assert transport.retryable(exc) is expected
