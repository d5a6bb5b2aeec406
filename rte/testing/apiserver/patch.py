"""The two standard patch formats: JSON merge patch (RFC 7386) and JSON patch (RFC 6902).

Strategic merge patch is not here: the apiserver refuses it for custom resources, and for the
built-in kinds this double serves (Lease, Pod, Node) it is treated as a merge patch, which gives
the same result for maps and scalars and only differs for keyed lists.
"""

from __future__ import annotations

import copy
from typing import Any


class PatchError(Exception):
    """A patch that is malformed or cannot be applied; the server maps it to 400 or 422."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _split(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"invalid JSON pointer {pointer!r}: must start with '/'")
    return [_unescape(t) for t in pointer[1:].split("/")]


def _index(container: list[Any], token: str, *, for_add: bool) -> int:
    if for_add and token == "-":
        return len(container)
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise PatchError(f"invalid array index {token!r}")
    i = int(token)
    if i > len(container) or (not for_add and i == len(container)):
        raise PatchError(f"array index {i} out of bounds")
    return i


def _parent(doc: Any, tokens: list[str], pointer: str) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, for_add=False)]
        else:
            raise PatchError(f"path {pointer!r} does not exist")
    return node


def _get(doc: Any, pointer: str) -> Any:
    tokens = _split(pointer)
    if not tokens:
        return doc
    parent = _parent(doc, tokens, pointer)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, for_add=False)]
    raise PatchError(f"path {pointer!r} does not exist")


def _remove(doc: Any, pointer: str) -> Any:
    tokens = _split(pointer)
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _parent(doc, tokens, pointer)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, for_add=False))
    raise PatchError(f"path {pointer!r} does not exist")


def _add(doc: Any, pointer: str, value: Any) -> Any:
    tokens = _split(pointer)
    if not tokens:
        return value
    parent = _parent(doc, tokens, pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, for_add=True), value)
    else:
        raise PatchError(f"path {pointer!r} does not exist")
    return doc


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902; the whole patch fails if any operation fails."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"invalid operation {op!r}")
        kind, path = op["op"], op["path"]
        if kind in ("add", "replace", "test") and "value" not in op:
            raise PatchError(f"operation {kind} at {path!r} has no value")
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op["value"]))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            if not _split(path):
                doc = copy.deepcopy(op["value"])
                continue
            _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(op["value"]))
        elif kind in ("move", "copy"):
            source = op.get("from")
            if not isinstance(source, str):
                raise PatchError(f"operation {kind} at {path!r} has no 'from'")
            value = _remove(doc, source) if kind == "move" else copy.deepcopy(_get(doc, source))
            doc = _add(doc, path, value)
        elif kind == "test":
            if _get(doc, path) != op["value"]:
                raise PatchError(f"testing value {path} failed")
        else:
            raise PatchError(f"unknown operation {kind!r}")
    return doc
