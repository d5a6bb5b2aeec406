"""fieldSelector and labelSelector parsing, for list and watch."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .status import bad_request

Predicate = Callable[[dict[str, Any]], bool]


def _field_value(obj: dict[str, Any], path: str) -> str:
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def field_selector(text: str, allowed: frozenset[str]) -> Predicate:
    """``a=b,c!=d``; only fields the resource supports, like the apiserver (400 otherwise)."""
    terms: list[tuple[str, bool, str]] = []
    for term in filter(None, (t.strip() for t in text.split(","))):
        match = re.fullmatch(r"([^=!]+)(==|=|!=)(.*)", term)
        if not match:
            raise bad_request(f'invalid selector: "{text}"; can\'t understand "{term}"')
        path, op, value = match.groups()
        path = path.strip()
        if path not in allowed and path not in ("metadata.name", "metadata.namespace"):
            raise bad_request(f"field label not supported: {path}")
        terms.append((path, op != "!=", value.strip()))

    def matches(obj: dict[str, Any]) -> bool:
        return all((_field_value(obj, p) == v) == want for p, want, v in terms)

    return matches


_SET_TERM = re.compile(r"\s*([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*")


def _split_terms(text: str) -> list[str]:
    # Commas separate terms except inside the parentheses of a set term.
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return [t.strip() for t in terms if t.strip()]


def _requirement_holds(labels: dict[str, str], key: str, op: str, values: frozenset[str]) -> bool:
    if op == "in":
        return labels.get(key) in values
    if op == "notin":
        return labels.get(key) not in values
    if op == "exists":
        return key in labels
    if op == "!exists":
        return key not in labels
    if op == "!=":
        return labels.get(key) not in values
    return labels.get(key) in values  # "=" and "=="


def label_selector(text: str) -> Predicate:
    """Equality (``=``, ``==``, ``!=``), set (``in``, ``notin``) and existence (``k``, ``!k``) terms."""
    requirements: list[tuple[str, str, frozenset[str]]] = []
    for term in _split_terms(text):
        set_match = _SET_TERM.fullmatch(term)
        eq_match = re.fullmatch(r"([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)", term)
        exists_match = re.fullmatch(r"(!?)([\w./-]+)", term)
        if set_match:
            values = frozenset(v.strip() for v in set_match.group(3).split(",") if v.strip())
            requirements.append((set_match.group(1), set_match.group(2), values))
        elif eq_match:
            requirements.append((eq_match.group(1), eq_match.group(2), frozenset({eq_match.group(3)})))
        elif exists_match:
            op = "!exists" if exists_match.group(1) else "exists"
            requirements.append((exists_match.group(2), op, frozenset()))
        else:
            raise bad_request(f'unable to parse requirement: "{term}"')

    def matches(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(_requirement_holds(labels, k, op, v) for k, op, v in requirements)

    return matches


def combined(field: Predicate | None, label: Predicate | None) -> Predicate:
    def matches(obj: dict[str, Any]) -> bool:
        return (field is None or field(obj)) and (label is None or label(obj))

    return matches
