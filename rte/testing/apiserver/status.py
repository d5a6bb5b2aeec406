"""Kubernetes ``Status`` bodies and the exception that carries one to the HTTP layer.

Clients (client-go, the Python ``kubernetes`` package) branch on ``reason`` and ``code``, and some
read ``details`` (the name, ``causes`` of a 422, ``retryAfterSeconds`` of a 429), so every failure
this double returns has the same shape as the real apiserver's.
"""

from __future__ import annotations

from typing import Any

# The reason the real apiserver puts next to each code when nothing more specific applies.
REASONS: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """A request that ends in a Kubernetes ``Status`` failure."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason if reason is not None else REASONS.get(code, "")
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        return failure_status(self.code, self.message, reason=self.reason, details=self.details)


def failure_status(
    code: int, message: str, *, reason: str | None = None, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
    body["message"] = message
    reason = reason if reason is not None else REASONS.get(code, "")
    if reason:  # omitted when empty, as Go's omitempty does
        body["reason"] = reason
    body["code"] = code
    if details is not None:
        body["details"] = details
    return body


def success_status(details: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def qualified(plural: str, group: str) -> str:
    """``noderesourcetopologies.topology.node.k8s.io``, or just ``nodes`` for the core group."""
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        404,
        f'{qualified(plural, group)} "{name}" not found',
        details={"name": name, "group": group, "kind": plural},
    )


def no_such_path() -> ApiError:
    # What the apiserver answers for a path no API serves, e.g. a CR whose CRD is not installed.
    return ApiError(404, "the server could not find the requested resource", details={})


def already_exists(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        409,
        f'{qualified(plural, group)} "{name}" already exists',
        reason="AlreadyExists",
        details={"name": name, "group": group, "kind": plural},
    )


def conflict(plural: str, group: str, name: str, why: str | None = None) -> ApiError:
    why = why or "the object has been modified; please apply your changes to the latest version and try again"
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {qualified(plural, group)} "{name}": {why}',
        reason="Conflict",
        details={"name": name, "group": group, "kind": plural},
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def invalid(kind: str, group: str, name: str, causes: list[dict[str, str]]) -> ApiError:
    """422 with one cause per offending field, worded like the apiserver's field errors."""
    parts = [f"{c['field']}: {c['message']}" for c in causes]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    qualified_kind = f"{kind}.{group}" if group else kind
    return ApiError(
        422,
        f'{qualified_kind} "{name}" is invalid: {summary}',
        details={"name": name, "group": group, "kind": kind, "causes": causes},
    )


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    return ApiError(
        415,
        f"the body of the request was in an unknown format ({content_type or 'none'}) - "
        f"accepted media types include: {', '.join(accepted)}",
    )


def too_many_requests(retry_after: int) -> ApiError:
    return ApiError(
        429,
        "Too many requests, please try again later.",
        details={"retryAfterSeconds": retry_after},
        headers={"Retry-After": str(retry_after)},
    )


def expired(requested: int, oldest: int) -> ApiError:
    return ApiError(410, f"too old resource version: {requested} ({oldest})", reason="Expired")


def generic(code: int, message: str | None = None, retry_after: int | None = None) -> ApiError:
    """Any code with its usual reason; used by fault injection."""
    details: dict[str, Any] | None = None
    headers: dict[str, str] = {}
    if retry_after is not None:
        details = {"retryAfterSeconds": retry_after}
        headers["Retry-After"] = str(retry_after)
    if code == 500:
        details = {**(details or {}), "causes": [{"message": message or "injected failure"}]}
    return ApiError(code, message or f"injected failure ({code})", details=details, headers=headers)
