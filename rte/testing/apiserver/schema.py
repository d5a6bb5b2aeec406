"""Validation and pruning of custom resources against a CRD's OpenAPI v3 schemas.

The CRD's ``openAPIV3Schema`` is the OpenAPI 3.0 dialect of JSON Schema (draft 4 semantics, so
``1.0`` is not an integer), plus Kubernetes extensions. Only the extensions the NRT CRD uses are
handled: ``x-kubernetes-int-or-string`` (an integer or a string; the pattern applies only to
strings, which is what makes the quantity pattern work) and ``nullable``.

Like the real apiserver, fields the schema does not declare are pruned before validation, and
reported as warnings (``fieldValidation=Warn``, the default) or rejected (``Strict``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

try:
    import jsonschema
except ModuleNotFoundError as e:  # a test extra, not a dependency of rte itself
    raise ModuleNotFoundError(
        "rte.testing.apiserver needs jsonschema to validate custom resources: pip install 'rte[test]'",
        name=e.name,
    ) from e

# Keys of ObjectMeta a client may send; anything else under ``metadata`` is dropped like the
# apiserver's typed decoding of ObjectMeta does.
OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class Crd:
    """The parts of a CustomResourceDefinition the server needs."""

    manifest: dict[str, Any]
    group: str
    kind: str
    list_kind: str
    plural: str
    singular: str
    short_names: tuple[str, ...]
    namespaced: bool
    storage_version: str
    schemas: dict[str, dict[str, Any]]  # served version -> openAPIV3Schema

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def versions(self) -> tuple[str, ...]:
        return tuple(self.schemas)


def load_crd(path: Path) -> Crd:
    manifest = yaml.safe_load(path.read_text())
    spec = manifest["spec"]
    names = spec["names"]
    schemas = {v["name"]: v["schema"]["openAPIV3Schema"] for v in spec["versions"] if v.get("served", False)}
    storage = [v["name"] for v in spec["versions"] if v.get("storage", False)]
    if len(storage) != 1:
        raise ValueError(f"{path}: expected exactly one storage version, found {storage}")
    return Crd(
        manifest=manifest,
        group=spec["group"],
        kind=names["kind"],
        list_kind=names.get("listKind", names["kind"] + "List"),
        plural=names["plural"],
        singular=names.get("singular", names["kind"].lower()),
        short_names=tuple(names.get("shortNames", [])),
        namespaced=spec["scope"] == "Namespaced",
        storage_version=storage[0],
        schemas=schemas,
    )


def _to_json_schema(node: Any) -> Any:
    """Rewrite the Kubernetes extensions into plain draft-4 JSON Schema."""
    if isinstance(node, list):
        return [_to_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _to_json_schema(v) for k, v in node.items() if not k.startswith("x-kubernetes-")}
    if node.get("x-kubernetes-int-or-string") and "anyOf" not in out:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if out.pop("nullable", False) and "type" in out:
        out["type"] = [out["type"], "null"]
    return out


_FORMATS = jsonschema.FormatChecker(formats=())


def _is_int64(value: object) -> bool:
    return not isinstance(value, int) or INT64_MIN <= value <= INT64_MAX


def _is_int32(value: object) -> bool:
    return not isinstance(value, int) or -(2**31) <= value < 2**31


_FORMATS.checks("int64")(_is_int64)
_FORMATS.checks("int32")(_is_int32)


def field_path(parts: Any) -> str:
    """``['zones', 0, 'type']`` -> ``zones[0].type``, the apiserver's field path spelling."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _quote(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return str(value)
    return f'"{type(value).__name__}"'


_JSON_TYPE = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}


def _causes(error: jsonschema.ValidationError) -> Iterator[dict[str, str]]:
    path = field_path(error.absolute_path)
    where = path or "<root>"
    if error.validator == "required":
        instance = error.instance if isinstance(error.instance, dict) else {}
        for name in error.validator_value:
            if name not in instance:
                field = f"{path}.{name}" if path else name
                yield {"reason": "FieldValueRequired", "message": "Required value", "field": field}
        return
    value = error.instance
    if error.validator in ("type", "anyOf"):
        actual = _JSON_TYPE.get(type(value), "null")
        wanted = error.validator_value
        if error.validator == "anyOf":
            wanted = ",".join(str(s.get("type")) for s in error.validator_value)
        elif isinstance(wanted, list):
            wanted = ",".join(wanted)
        yield {
            "reason": "FieldValueTypeInvalid",
            "message": f'Invalid value: "{actual}": {where} in body must be of type {wanted}: "{actual}"',
            "field": where,
        }
        return
    if error.validator == "pattern":
        detail = f"{where} in body should match '{error.validator_value}'"
    elif error.validator == "enum":
        allowed = ", ".join(_quote(v) for v in error.validator_value)
        detail = f"{where} in body should be one of [{allowed}]"
    elif error.validator == "format":
        detail = f"{where} in body must be of type {error.validator_value}: {_quote(value)}"
    else:
        detail = error.message
    yield {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {_quote(value)}: {detail}",
        "field": where,
    }


class Validator:
    """Prunes and validates objects of one served version of a CRD."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self._schema = schema
        plain = _to_json_schema(schema)
        # metadata is validated as ObjectMeta by the server, not by the CRD schema.
        plain.setdefault("properties", {})["metadata"] = {"type": "object"}
        self._validator = jsonschema.Draft4Validator(plain, format_checker=_FORMATS)

    def prune(self, obj: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """A copy of ``obj`` without undeclared fields, and the paths of what was dropped."""
        out = copy.deepcopy(obj)
        dropped: list[str] = []
        _prune(out, self._schema, [], dropped, root=True)
        meta = out.get("metadata")
        if isinstance(meta, dict):
            for key in sorted(set(meta) - OBJECT_META_FIELDS):
                del meta[key]
                dropped.append(f"metadata.{key}")
        return out, dropped

    def causes(self, obj: dict[str, Any]) -> list[dict[str, str]]:
        errors = sorted(self._validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path])
        return [cause for e in errors for cause in _causes(e)]


def _prune(
    node: Any, schema: dict[str, Any], path: list[Any], dropped: list[str], root: bool = False
) -> None:
    if isinstance(node, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(node):
                _prune(item, items, [*path, i], dropped)
        return
    if not isinstance(node, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    props: dict[str, Any] = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    if not props and extra is None:
        return
    for key in list(node):
        if root and key in ("apiVersion", "kind", "metadata"):
            continue
        if key in props:
            _prune(node[key], props[key], [*path, key], dropped)
        elif isinstance(extra, dict):
            _prune(node[key], extra, [*path, key], dropped)
        elif extra is not True:
            del node[key]
            dropped.append(field_path([*path, key]))


# RFC 1123 subdomain: what the apiserver requires of the names of nodes, leases, pods and CRs.
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def name_causes(name: str) -> list[dict[str, str]]:
    if len(name) > 253:
        msg = "must be no more than 253 characters"
    elif _DNS_SUBDOMAIN.match(name):
        return []
    else:
        msg = (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return [
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "{name}": {msg}',
            "field": "metadata.name",
        }
    ]
