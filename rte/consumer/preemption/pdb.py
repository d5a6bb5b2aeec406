"""PodDisruptionBudgets as preemption reads them: a label selector, the disruptions allowed, and
which candidate pods an eviction would put over budget.

The counting follows kube-scheduler's ``filterPodsWithPDBViolation``
(kubernetes/kubernetes ``pkg/scheduler/framework/preemption/preemption.go``): walking the pods in
order, each pod that matches a PDB of its namespace takes one from that PDB's
``status.disruptionsAllowed``, and a pod that takes one below zero violates it. A PDB whose
selector is empty or missing matches nothing; a pod with no labels matches no PDB; a pod already
listed in the PDB's ``status.disruptedPods`` (its eviction went through the apiserver, so the
budget already counts it) takes nothing and violates nothing.

The selector is ``metav1.LabelSelector`` (apimachinery ``pkg/apis/meta/v1/helpers.go``
``LabelSelectorAsSelector``): ``matchLabels`` and ``matchExpressions`` with ``In``, ``NotIn``,
``Exists`` and ``DoesNotExist``, all ANDed. An invalid selector makes the scheduler skip that PDB;
here it is refused when the PDB is read (:func:`budget_from_manifest`), so the watch logs and
skips it, which comes to the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rte.errors import InputError
from rte.model.pod import PodKey

_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``matchExpressions`` entry (or one ``matchLabels`` pair, as ``In`` with one value)."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        # apimachinery pkg/labels/selector.go Requirement.Matches
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        if self.operator == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "Exists":
            return self.key in labels
        return self.key not in labels  # DoesNotExist


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed ``metav1.LabelSelector``: every requirement must hold."""

    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)


def parse_label_selector(value: Any, where: str) -> LabelSelector:
    """A ``metav1.LabelSelector`` object (None: the empty selector); InputError naming ``where``
    and the field when it is malformed, as ``LabelSelectorAsSelector`` would refuse it."""
    if value is None:
        return LabelSelector()
    if not isinstance(value, Mapping):
        raise InputError(where, f"expected an object, got {type(value).__name__}")
    out: list[Requirement] = []
    labels = value.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        raise InputError(f"{where}.matchLabels", "expected an object")
    for key, val in labels.items():
        if not isinstance(key, str) or not isinstance(val, str):
            raise InputError(f"{where}.matchLabels", f"expected string keys and values, got {key!r}: {val!r}")
        out.append(Requirement(key, "In", frozenset({val})))
    expressions = value.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise InputError(f"{where}.matchExpressions", "expected a list")
    for i, expr in enumerate(expressions):
        out.append(_requirement(expr, f"{where}.matchExpressions[{i}]"))
    return LabelSelector(tuple(out))


def _requirement(expr: Any, where: str) -> Requirement:
    if not isinstance(expr, Mapping):
        raise InputError(where, "expected an object")
    key, operator, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if not isinstance(key, str) or not key:
        raise InputError(f"{where}.key", f"expected a label key, got {key!r}")
    if operator not in _OPERATORS:
        raise InputError(f"{where}.operator", f"expected one of {sorted(_OPERATORS)}, got {operator!r}")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise InputError(f"{where}.values", "expected a list of strings")
    # apimachinery pkg/labels/selector.go NewRequirement: In/NotIn need values, Exists/DoesNotExist none.
    if operator in ("In", "NotIn") and not values:
        raise InputError(f"{where}.values", f"{operator} needs at least one value")
    if operator in ("Exists", "DoesNotExist") and values:
        raise InputError(f"{where}.values", f"{operator} takes no values")
    return Requirement(key, str(operator), frozenset(values))


@dataclass(frozen=True, slots=True)
class Budget:
    """One PodDisruptionBudget, as much of it as preemption reads."""

    namespace: str
    name: str
    selector: LabelSelector
    allowed: int
    """``status.disruptionsAllowed``."""
    disrupted: frozenset[str] = frozenset()
    """Pod names in ``status.disruptedPods``."""

    @property
    def key(self) -> PodKey:
        return (self.namespace, self.name)


def budget_from_manifest(obj: Any, source: str = "PodDisruptionBudget") -> Budget:
    """A policy/v1 PodDisruptionBudget object; InputError naming the object and field when malformed."""
    if not isinstance(obj, Mapping):
        raise InputError(source, f"expected an object, got {type(obj).__name__}")
    metadata, spec, status = (obj.get(k) or {} for k in ("metadata", "spec", "status"))
    if not isinstance(metadata, Mapping) or not isinstance(spec, Mapping) or not isinstance(status, Mapping):
        raise InputError(source, "metadata, spec and status must be objects")
    name, namespace = metadata.get("name"), metadata.get("namespace") or "default"
    if not isinstance(name, str) or not name or not isinstance(namespace, str):
        raise InputError(f"{source}: metadata.name", "a PodDisruptionBudget needs a name and a namespace")
    where = f"{source} {namespace}/{name}"
    allowed = status.get("disruptionsAllowed", 0)
    if isinstance(allowed, bool) or not isinstance(allowed, int):
        raise InputError(f"{where}: status.disruptionsAllowed", f"expected an integer, got {allowed!r}")
    disrupted = status.get("disruptedPods") or {}
    if not isinstance(disrupted, Mapping):
        raise InputError(f"{where}: status.disruptedPods", "expected an object")
    return Budget(
        namespace=namespace,
        name=name,
        selector=parse_label_selector(spec.get("selector"), f"{where}: spec.selector"),
        allowed=allowed,
        disrupted=frozenset(str(k) for k in disrupted),
    )


def pdb_violations(
    pods: Sequence[tuple[str, str, Mapping[str, str]]], budgets: Iterable[Budget]
) -> list[bool]:
    """For each pod (namespace, name, labels), in order, whether evicting it and every pod before
    it violates a budget (``filterPodsWithPDBViolation``, see the module docstring)."""
    by_namespace: dict[str, list[Budget]] = {}
    for b in budgets:
        if not b.selector.empty:  # an empty selector matches nothing
            by_namespace.setdefault(b.namespace, []).append(b)
    left = {b.key: b.allowed for group in by_namespace.values() for b in group}
    out: list[bool] = []
    for namespace, name, labels in pods:
        violated = False
        if labels:  # a pod with no labels matches no PDB
            for b in by_namespace.get(namespace, ()):
                if name in b.disrupted or not b.selector.matches(labels):
                    continue
                left[b.key] -= 1
                violated = violated or left[b.key] < 0
        out.append(violated)
    return out
