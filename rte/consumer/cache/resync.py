"""Which pods the scheduler believes a node runs, and whether the node's NRT agrees.

Pure functions behind the reserve cache's resync (docs/fingerprint-agreement.md):

* :func:`is_relevant` is the informer-mode rule: ``Dedicated`` counts every bound pod that left
  ``Pending`` (terminal ones included), ``Shared`` only ``Running`` ones;
* :func:`expected_fingerprint` finds the published fingerprint and whether it covers only pods
  with exclusive resources;
* :func:`compare` recomputes our fingerprint and classifies the outcome;
* :func:`is_in_flight` says which pods no NRT can reflect yet (bound or binding, not started).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from rte.consumer.config import ResyncMethod
from rte.model import fingerprint as fp
from rte.model.exclusive import is_exclusive
from rte.model.pod import Pod, counts_for_fingerprint
from rte.model.topology import NodeTopology
from rte.model.vocabulary import FingerprintMethod, InformerMode

PodsInput = Iterable[Pod] | Mapping[str, Iterable[Pod]]
"""All pods the informer holds, or the same grouped by node name."""


class CompareResult(StrEnum):
    MATCH = "match"
    MISMATCH = "mismatch"
    """Routine: the NRT describes another pod set (it lags, or leads, our view)."""
    MISSING = "missing"
    """The NRT carries no fingerprint: the node can never be confirmed."""
    MALFORMED = "malformed"
    INCOMPATIBLE = "incompatible"


def is_relevant(pod: Pod, mode: InformerMode) -> bool:
    """Whether ``pod`` belongs in the fingerprinted set of its node (:func:`counts_for_fingerprint`)."""
    return counts_for_fingerprint(pod, mode)


def is_in_flight(pod: Pod, node: str, mode: InformerMode) -> bool:
    """Placed on ``node`` (or being bound to it) but not yet part of any fingerprinted set.

    Such a pod is in neither side's fingerprint, so a matching NRT does not reflect it: its
    reservation must outlive the flush. Terminal pods hold nothing any more.
    """
    if pod.node_name not in ("", node) or pod.is_terminal:
        return False
    return not is_relevant(pod, mode)


def expected_fingerprint(topology: NodeTopology, method: ResyncMethod) -> tuple[str, bool, str]:
    """``(expected, only_exclusive, source)``, looked up as the reference does.

    The reference is ``podFingerprintForNodeTopology`` in kubernetes-sigs/scheduler-plugins
    ``pkg/noderesourcetopology/cache/store.go``.

    ``source`` is ``attribute``, ``annotation`` or ``""``; an empty ``expected`` means there is
    nothing to check against. The legacy annotation always means "all pods".
    """
    value = topology.attribute(fp.ATTRIBUTE)
    if value is not None:
        if method is ResyncMethod.ALL:
            only_exclusive = False
        elif method is ResyncMethod.ONLY_EXCLUSIVE_RESOURCES:
            only_exclusive = True
        else:
            only_exclusive = (
                topology.attribute(fp.ATTRIBUTE_METHOD) == FingerprintMethod.WITH_EXCLUSIVE_RESOURCES
            )
        return value, only_exclusive, "attribute"
    annotation = topology.annotations.get(fp.ANNOTATION)
    if annotation is not None:
        return annotation, False, "annotation"
    return "", False, ""


def fingerprinted_pods(
    pods: Iterable[Pod], mode: InformerMode, only_exclusive: bool, resource_names: Collection[str]
) -> list[Pod]:
    """The pods of one node that our fingerprint covers, in the order given."""
    out = [p for p in pods if is_relevant(p, mode)]
    if only_exclusive:
        out = [p for p in out if is_exclusive(p, resource_names)]
    return out


@dataclass(frozen=True)
class Comparison:
    """One fingerprint check of one node, kept for the state dump."""

    result: CompareResult
    expected: str
    computed: str
    method: FingerprintMethod
    """Which pods we counted."""
    source: str
    pod_count: int
    time: float
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "result": self.result.value,
            "expected": self.expected,
            "computed": self.computed,
            "method": self.method.value,
            "source": self.source,
            "podCount": self.pod_count,
            "time": self.time,
            "detail": self.detail,
        }


def compare(
    topology: NodeTopology,
    pods_on_node: Iterable[Pod],
    method: ResyncMethod,
    mode: InformerMode,
    resource_names: Collection[str],
    now: float,
) -> Comparison:
    """Check the node's published fingerprint against the pods we believe it runs.

    ``resource_names`` should be those of ``topology`` itself, the NRT being checked: the agent
    classified exclusivity against the names it was about to publish, not against whatever an
    older NRT in our cache listed (the last row of "The mismatch trap" in
    docs/fingerprint-agreement.md).
    """
    expected, only_exclusive, source = expected_fingerprint(topology, method)
    counted = fingerprinted_pods(pods_on_node, mode, only_exclusive, resource_names)
    keys = [p.key for p in counted]
    computed = fp.compute(keys)
    method_name = FingerprintMethod.WITH_EXCLUSIVE_RESOURCES if only_exclusive else FingerprintMethod.ALL

    def result(kind: CompareResult, detail: str = "") -> Comparison:
        return Comparison(
            result=kind,
            expected=expected,
            computed=computed,
            method=method_name,
            source=source,
            pod_count=len(keys),
            time=now,
            detail=detail,
        )

    if not expected:
        return result(CompareResult.MISSING, "missing NodeTopology podset fingerprint data")
    try:
        fp.check(expected, computed)
    except fp.FingerprintMismatchError as e:
        return result(CompareResult.MISMATCH, str(e))
    except fp.IncompatibleVersionError as e:
        return result(CompareResult.INCOMPATIBLE, str(e))
    except fp.MalformedFingerprintError as e:
        return result(CompareResult.MALFORMED, str(e))
    return result(CompareResult.MATCH)


def group_pods(pods: PodsInput) -> tuple[dict[str, list[Pod]], dict[tuple[str, str], Pod]]:
    """``(bound pods by node, every pod by (namespace, name))`` from either input shape."""
    by_node: dict[str, list[Pod]] = {}
    known: dict[tuple[str, str], Pod] = {}
    flat: Iterable[Pod]
    flat = (p for group in pods.values() for p in group) if isinstance(pods, Mapping) else pods
    for pod in flat:
        known[pod.key] = pod
        if pod.node_name:
            by_node.setdefault(pod.node_name, []).append(pod)
    return by_node, known


def log_comparison(log: logging.Logger, node: str, result: Comparison) -> None:
    """A mismatch is routine (debug); a missing fingerprint is news; anything else is a warning."""
    if result.result is CompareResult.MATCH:
        log.debug("node %s: fingerprint match over %d pods, flushing", node, result.pod_count)
    elif result.result is CompareResult.MISMATCH:
        log.debug("node %s: %s (%d pods)", node, result.detail, result.pod_count)
    elif result.result is CompareResult.MISSING:
        log.info("node %s: %s", node, result.detail)
    else:
        log.warning("node %s: cannot check the NRT fingerprint: %s", node, result.detail)
