"""Body admission for writes: decode, check type metadata, prune, validate, normalise.

The steps the apiserver takes before a body reaches storage, as functions of the parsed
:class:`~.request.Request`; ``rest.py`` calls them for create, update, patch and apply.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import yaml

from . import status
from .request import APPLY_PATCH, JSON, YAML, Request, fmt_micro_time
from .resources import ResourceDef
from .schema import name_causes
from .storage import Obj


def decode(req: Request, accepted: tuple[str, ...] = (JSON, YAML)) -> Any:
    ctype = req.content_type or JSON
    if ctype not in accepted:
        raise status.unsupported_media_type(ctype, list(accepted))
    try:
        if ctype in (YAML, APPLY_PATCH):
            return yaml.safe_load(req.body.decode() or "null")
        return json.loads(req.body or b"null")
    except (ValueError, yaml.YAMLError) as e:
        raise status.bad_request(f"the body of the request could not be decoded: {e}") from None


def check_type_meta(req: Request, obj: Any) -> Obj:
    """apiVersion and kind must match the URL (custom resources must carry them)."""
    res = req.resource
    if not isinstance(obj, dict):
        raise status.bad_request(f"the body of the request must be a {res.kind} object")
    for field_name, label, want in (
        ("apiVersion", "API version", res.api_version(req.version)),
        ("kind", "kind", res.kind),
    ):
        got = obj.get(field_name)
        if got in (None, ""):
            if res.custom:
                raise status.bad_request(f"Object '{field_name}' is missing in the request body")
        elif got != want:
            raise status.bad_request(
                f"the {label} in the data ({got}) does not match the expected {label} ({want})"
            )
    meta = obj.get("metadata", {})
    if not isinstance(meta, dict):
        raise status.bad_request("metadata: must be an object")
    return {**obj, "metadata": dict(meta)}


def prune(req: Request, obj: Obj, warnings: list[str], mode: str) -> Obj:
    """Drop undeclared fields; warn, ignore or refuse them per ``fieldValidation``."""
    if not req.resource.custom:
        return obj
    pruned, dropped = req.resource.validators[req.version].prune(obj)
    if dropped and mode == "Strict":
        listed = ", ".join(f'unknown field "{d}"' for d in dropped)
        raise status.bad_request(f"strict decoding error: {listed}")
    if mode != "Ignore":
        warnings.extend(f'unknown field "{d}"' for d in dropped)
    return pruned


def admit(req: Request, body: Any, warnings: list[str]) -> Obj:
    """Type-check, default, prune and validate a body; the result is in storage form."""
    res = req.resource
    obj = check_type_meta(req, body)
    obj = prune(req, obj, warnings, req.query.get("fieldValidation", "Warn"))
    meta = obj["metadata"]
    for map_name in ("labels", "annotations"):
        value = meta.get(map_name)
        if value is not None and not (
            isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
        ):
            raise status.bad_request(f"metadata.{map_name}: must be a map of string to string")
    if res.namespaced:
        ns = meta.get("namespace") or req.namespace
        if ns != req.namespace:
            raise status.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = ns
    else:
        meta.pop("namespace", None)
    if meta.get("name"):
        causes = name_causes(meta["name"])
    else:
        causes = [
            {
                "reason": "FieldValueRequired",
                "message": "Required value: name or generateName is required",
                "field": "metadata.name",
            }
        ]
    if res.custom:
        causes += res.validators[req.version].causes(obj)
    causes += _builtin_causes(res, obj)
    if causes:
        raise status.invalid(res.kind, res.group, meta.get("name", ""), causes)
    _normalise_times(res, obj)
    obj["apiVersion"], obj["kind"] = res.storage_api_version, res.kind
    return obj


def _builtin_causes(res: ResourceDef, obj: Obj) -> list[dict[str, str]]:
    if res.plural != "leases":
        return []
    duration = obj.get("spec", {}).get("leaseDurationSeconds")
    if duration is not None and (not isinstance(duration, int) or duration <= 0):
        return [
            {
                "reason": "FieldValueInvalid",
                "message": f"Invalid value: {duration}: must be greater than 0",
                "field": "spec.leaseDurationSeconds",
            }
        ]
    return []


def _normalise_times(res: ResourceDef, obj: Obj) -> None:
    for path in res.micro_time_fields:
        node: Any = obj
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict) or node.get(path[-1]) is None:
            continue
        raw = node[path[-1]]
        try:
            parsed = datetime.fromisoformat(str(raw))
        except ValueError:
            raise status.bad_request(
                f'{".".join(path)}: parsing time "{raw}": not an RFC 3339 timestamp'
            ) from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        node[path[-1]] = fmt_micro_time(parsed.astimezone(UTC))
