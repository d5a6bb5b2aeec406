"""Why the kubelet would refuse a pod, in words that name its rule.

Every rejection starts with the rule that fires: the Topology Manager policy (``restricted:``,
``single-numa-node:``), the CPU manager's ``SMTAlignmentError:``, a manager's allocation error
(``UnexpectedAdmissionError:``) or the pod-level shared-pool check (``TopologyAffinityError:``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rte.model.admission.hints import ANY, NONE, ResourceHints
from rte.model.admission.masks import format_mask, popcount
from rte.model.admission.node import is_memory_type
from rte.model.admission.units import KIND_APP, KIND_INIT, KIND_POD, KIND_SIDECAR, AdmissionUnit
from rte.model.quantity import QuantityFormat, format_quantity
from rte.model.topology_manager import POLICY_SINGLE_NUMA_NODE

TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"
SMT_ALIGNMENT_ERROR = "SMTAlignmentError"
UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"

_NOUNS = {KIND_INIT: "init container", KIND_SIDECAR: "sidecar container", KIND_APP: "container"}


def request_text(resource: str, amount: int) -> str:
    """``cpu=8``, ``memory=16Gi``, ``memory=10G``, ``vendor.com/nic=2``."""
    if is_memory_type(resource):
        # Whole MiB were most likely written in binary units (16Gi), anything else in decimal (10G).
        style = QuantityFormat.BINARY_SI if amount % (1 << 20) == 0 else QuantityFormat.DECIMAL_SI
        return f"{resource}={format_quantity(amount, style)}"
    return f"{resource}={amount}"


def listing(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def unit_label(unit: AdmissionUnit, named: bool) -> str:
    """`` for container "app"`` (empty for a pod of one unit, which needs no name)."""
    if unit.kind == KIND_POD:
        return " for the pod" if named else ""
    return f' for {_NOUNS[unit.kind]} "{unit.name}"' if named else ""


def requested(unit: AdmissionUnit) -> dict[str, int]:
    """What the unit asks the managers for, by resource name."""
    out: dict[str, int] = {}
    if unit.cpus:
        out["cpu"] = unit.cpus
    out.update(unit.memory)
    out.update(unit.devices)
    return out


def policy_reason(
    policy: str,
    unit: AdmissionUnit,
    hints: Sequence[ResourceHints],
    best: int,
    ids: Sequence[int],
    named: bool,
) -> str:
    """Why the merged hint of ``unit`` is not admitted under ``policy``."""
    asked = requested(unit)
    where = unit_label(unit, named)
    aligned = [h for h in hints if h.kind != ANY]
    if policy == POLICY_SINGLE_NUMA_NODE:
        alone = [h for h in aligned if not any(popcount(m) == 1 for m in h.preferred)]
        named_hints = alone or aligned
        what = listing([request_text(h.resource, asked.get(h.resource, 0)) for h in named_hints])
        return f"{policy}: no single NUMA zone holds {what}{where}"
    hopeless = [h for h in aligned if h.kind == NONE]
    if hopeless:
        what = listing([request_text(h.resource, asked.get(h.resource, 0)) for h in hopeless])
        return f"{policy}: no NUMA zone set holds {what}{where}"
    widths = _widths(aligned)
    return f"{policy}: best merged hint {format_mask(best, ids)}{where} is not preferred ({widths})"


def _widths(aligned: Sequence[ResourceHints]) -> str:
    """``cpu wants 1 zone, memory 2``, or, when all want the same width, what no such set holds."""
    firsts: dict[int, list[str]] = {}
    for h in aligned:
        firsts.setdefault(h.min_affinity, []).append(h.resource)
    if len(firsts) == 1:
        ((width, names),) = firsts.items()
        if len(names) == 1:
            return f"{names[0]} wants {width} zone{'' if width == 1 else 's'}"
        return f"{listing(names)} each want {width} zone{'' if width == 1 else 's'}, no such set holds all"
    first, *rest = aligned
    zones = "zone" if first.min_affinity == 1 else "zones"
    return ", ".join(
        [
            f"{first.resource} wants {first.min_affinity} {zones}",
            *(f"{h.resource} {h.min_affinity}" for h in rest),
        ]
    )


def smt_reason(cpus: int, threads: int, physical: int | None, unit: AdmissionUnit, named: bool) -> str | None:
    """The CPU manager's ``full-pcpus-only`` check (cpumanager ``policy_static.go``
    ``enforceSMTAlignment``), or None when it passes."""
    where = unit_label(unit, named)
    if cpus % threads:
        return f"{SMT_ALIGNMENT_ERROR}: cpu={cpus} is not a multiple of {threads} threads per core{where}"
    if physical is not None and cpus > physical:
        return f"{SMT_ALIGNMENT_ERROR}: cpu={cpus} exceeds the {physical} free physical CPUs{where}"
    return None


def success_reason(masks: Mapping[str, int | None], ids: Sequence[int], pod_scope: bool) -> str:
    """``fits NUMA zone 1``, ``fits NUMA zones {0,1}``, ``fits NUMA zones a=0, b={1,2}``."""
    aligned = {name: m for name, m in masks.items() if m is not None}
    if not aligned:
        return "fits: no request needs NUMA alignment"
    distinct = set(aligned.values())
    if len(distinct) == 1:
        (mask,) = distinct
        if popcount(mask) == 1:
            return f"fits NUMA zone {ids[mask.bit_length() - 1]}"
        if pod_scope or len(aligned) == 1:
            return f"fits NUMA zones {format_mask(mask, ids)}"

    def text(mask: int | None) -> str:
        if mask is None:
            return "any"
        return str(ids[mask.bit_length() - 1]) if popcount(mask) == 1 else format_mask(mask, ids)

    return "fits NUMA zones " + ", ".join(f"{name}={text(m)}" for name, m in masks.items())
