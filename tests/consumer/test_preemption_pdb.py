"""PodDisruptionBudgets for preemption (rte.consumer.preemption.pdb): the label selector of
apimachinery's ``LabelSelectorAsSelector`` (``pkg/apis/meta/v1/helpers.go``; matching as
``pkg/labels/selector.go`` ``Requirement.Matches``) and the counting of kube-scheduler's
``filterPodsWithPDBViolation`` (``pkg/scheduler/framework/preemption/preemption.go``)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rte.consumer.preemption.pdb import Budget, budget_from_manifest, parse_label_selector, pdb_violations
from rte.errors import InputError

W = "spec.selector"


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ({"matchLabels": {"app": "db"}}, {"app": "db", "x": "y"}, True),
        ({"matchLabels": {"app": "db"}}, {"app": "web"}, False),
        ({"matchLabels": {"app": "db"}}, {}, False),
        ({"matchExpressions": [expr("app", "In", "db", "web")]}, {"app": "web"}, True),
        ({"matchExpressions": [expr("app", "In", "db")]}, {"tier": "db"}, False),
        ({"matchExpressions": [expr("app", "NotIn", "db")]}, {"app": "web"}, True),
        ({"matchExpressions": [expr("app", "NotIn", "db")]}, {"app": "db"}, False),
        ({"matchExpressions": [expr("app", "NotIn", "db")]}, {}, True),  # absent key: NotIn holds
        ({"matchExpressions": [expr("app", "Exists")]}, {"app": ""}, True),
        ({"matchExpressions": [expr("app", "Exists")]}, {"tier": "a"}, False),
        ({"matchExpressions": [expr("app", "DoesNotExist")]}, {"tier": "a"}, True),
        ({"matchExpressions": [expr("app", "DoesNotExist")]}, {"app": "a"}, False),
        # matchLabels and matchExpressions are ANDed
        ({"matchLabels": {"app": "db"}, "matchExpressions": [expr("tier", "Exists")]}, {"app": "db"}, False),
        (
            {"matchLabels": {"app": "db"}, "matchExpressions": [expr("tier", "Exists")]},
            {"app": "db", "tier": "1"},
            True,
        ),
    ],
)
def test_selector_matches_as_apimachinery(
    selector: dict[str, Any], labels: dict[str, str], expected: bool
) -> None:
    assert parse_label_selector(selector, W).matches(labels) is expected


@pytest.mark.parametrize(
    ("selector", "field"),
    [
        ("app=db", W),
        ({"matchLabels": ["app"]}, "matchLabels"),
        ({"matchLabels": {"app": 1}}, "matchLabels"),
        ({"matchExpressions": {"key": "app"}}, "matchExpressions"),
        ({"matchExpressions": [expr("app", "Near", "x")]}, "matchExpressions[0].operator"),
        ({"matchExpressions": [expr("", "Exists")]}, "matchExpressions[0].key"),
        ({"matchExpressions": [expr("app", "In")]}, "matchExpressions[0].values"),
        ({"matchExpressions": [expr("app", "Exists", "x")]}, "matchExpressions[0].values"),
        (
            {"matchExpressions": [{"key": "app", "operator": "In", "values": [1]}]},
            "matchExpressions[0].values",
        ),
    ],
)
def test_a_malformed_selector_is_refused_naming_the_field(selector: Any, field: str) -> None:
    with pytest.raises(InputError, match=field.replace("[", r"\[").replace("]", r"\]")):
        parse_label_selector(selector, W)


def test_empty_and_missing_selectors_are_empty() -> None:
    assert parse_label_selector(None, W).empty
    assert parse_label_selector({}, W).empty
    assert parse_label_selector({"matchLabels": {}, "matchExpressions": []}, W).empty


def pdb(
    allowed: int, selector: Any = None, name: str = "p", namespace: str = "ns", **status: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": "db"}} if selector is None else selector},
        "status": {"disruptionsAllowed": allowed, **status},
    }


def test_a_budget_is_read_from_its_manifest() -> None:
    b = budget_from_manifest(pdb(2, disruptedPods={"db-0": "2026-11-28T20:00:00Z"}))
    assert (b.namespace, b.name, b.allowed, b.disrupted) == ("ns", "p", 2, frozenset({"db-0"}))
    assert b.selector.matches({"app": "db"})


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        ([], "PodDisruptionBudget"),
        ({"metadata": {}}, "metadata.name"),
        (pdb("1"), "status.disruptionsAllowed"),
        (pdb(True), "status.disruptionsAllowed"),
        (pdb(1, disruptedPods=["a"]), "status.disruptedPods"),
        (pdb(1, {"matchExpressions": [expr("a", "Gt", "1")]}), "ns/p: spec.selector.matchExpressions"),
    ],
)
def test_a_malformed_budget_is_refused_naming_it(obj: Any, field: str) -> None:
    with pytest.raises(InputError, match=field):
        budget_from_manifest(obj)


DB = {"app": "db"}


def budgets(*objs: dict[str, Any]) -> list[Budget]:
    return [budget_from_manifest(o) for o in objs]


def test_each_matching_pod_takes_one_and_the_one_below_zero_violates() -> None:
    pods = [("ns", f"db-{i}", DB) for i in range(3)]
    assert pdb_violations(pods, budgets(pdb(1))) == [False, True, True]
    assert pdb_violations(pods, budgets(pdb(0))) == [True, True, True]
    assert pdb_violations(pods, budgets(pdb(3))) == [False, False, False]


def test_what_matches_nothing() -> None:
    assert pdb_violations([("ns", "a", {})], budgets(pdb(0))) == [False]  # no labels
    assert pdb_violations([("other", "a", DB)], budgets(pdb(0))) == [False]  # another namespace
    assert pdb_violations([("ns", "a", {"app": "web"})], budgets(pdb(0))) == [False]
    assert pdb_violations([("ns", "a", DB)], budgets(pdb(0, {}))) == [False]  # empty selector


def test_a_pod_already_disrupted_takes_nothing_and_violates_nothing() -> None:
    pods = [("ns", "db-0", DB), ("ns", "db-1", DB)]
    assert pdb_violations(pods, budgets(pdb(1, disruptedPods={"db-0": "t"}))) == [False, False]
    assert pdb_violations(pods, budgets(pdb(0, disruptedPods={"db-0": "t"}))) == [False, True]


def test_a_pod_violates_when_any_of_its_budgets_goes_below_zero() -> None:
    both = budgets(pdb(5, name="wide"), pdb(0, {"matchLabels": {"tier": "1"}}, name="narrow"))
    pods = [("ns", "a", DB), ("ns", "b", {**DB, "tier": "1"})]
    assert pdb_violations(pods, both) == [False, True]


@given(
    allowed=st.integers(-2, 5),
    matching=st.lists(st.booleans(), max_size=10),
)
def test_the_count_is_what_exceeds_the_budget(allowed: int, matching: list[bool]) -> None:
    """Over one budget, the pods that violate are exactly the matching ones past the first
    ``max(allowed, 0)``: the scheduler's count for a whole victim set."""
    pods = [("ns", f"p{i}", DB if m else {"app": "web"}) for i, m in enumerate(matching)]
    flags = pdb_violations(pods, budgets(pdb(allowed)))
    assert not any(f for f, m in zip(flags, matching, strict=True) if not m)
    assert sum(flags) == max(0, sum(matching) - max(allowed, 0))
