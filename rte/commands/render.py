"""Human-readable rendering of a NodeTopology (the default ``rte dump`` output)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from fractions import Fraction

from rte.host.machine import Machine
from rte.model.cpuset import format_cpuset
from rte.model.quantity import Amount, quantity_text
from rte.model.topology import NodeTopology

_BYTE_RESOURCES = ("memory", "hugepages-")
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(value: Amount) -> str:
    """``98703962112`` -> ``91.9 GiB``; exact small values stay exact."""
    amount = Fraction(value)
    unit = 0
    while abs(amount) >= 1024 and unit < len(_UNITS) - 1:
        amount /= 1024
        unit += 1
    if amount.denominator == 1:
        return f"{amount.numerator} {_UNITS[unit]}"
    return f"{float(amount):.1f} {_UNITS[unit]}"


def _amount(resource: str, value: Amount) -> str:
    if resource.startswith(_BYTE_RESOURCES):
        return human_bytes(value)
    return quantity_text(value)


def _table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def render_table(
    topology: NodeTopology,
    machine: Machine,
    pinned: Mapping[int, Sequence[str]] | None = None,
    *,
    numbering: Mapping[int, int] | None = None,
) -> str:
    """The table of ``rte dump``; ``pinned``: published zone id -> the containers the published
    numaplacement puts there (``namespace/pod/container``), listed under each zone.
    ``numbering``: kernel NUMA id -> published zone id when the zones are renumbered
    (``--zone-names dense``); each zone then also shows its kernel id."""
    lines = [f"NodeResourceTopology {topology.name}: {len(topology.zones)} NUMA zone(s)", ""]
    node_ids = set(machine.node_ids)
    kernel_id = {published: kernel for kernel, published in (numbering or {}).items()}
    pci_by_node = Counter(d.numa_node for d in machine.pci_devices)
    for zone in topology.zones:
        published_id = zone.numa_id
        numa_id = kernel_id.get(published_id, published_id) if published_id is not None else None
        cpus = machine.node(numa_id).cpus if numa_id in node_ids and numa_id is not None else frozenset()
        distances = " ".join(f"{c.name}={c.value}" for c in zone.costs) or "-"
        kernel = f" (kernel NUMA node {numa_id})" if numbering is not None else ""
        lines.append(
            f"{zone.name}{kernel}  cpus {format_cpuset(cpus) or '-'} ({len(cpus)})  distances {distances}"
        )
        if numa_id is not None and pci_by_node.get(numa_id):
            lines.append(f"  pci devices: {pci_by_node[numa_id]}")
        rows = [("  RESOURCE", "CAPACITY", "ALLOCATABLE", "AVAILABLE")]
        rows += [
            (
                f"  {r.name}",
                _amount(r.name, r.capacity),
                _amount(r.name, r.allocatable),
                _amount(r.name, r.available),
            )
            for r in zone.resources
        ]
        lines += _table(rows)
        for attr in zone.attributes:
            lines.append(f"  {attr.name}: {attr.value}")
        if pinned and published_id is not None and pinned.get(published_id):
            lines.append(f"  pinned containers (numaplacement): {', '.join(pinned[published_id])}")
        lines.append("")
    packages = machine.packages()
    cores = machine.core_groups()
    lines.append(
        f"node: {len(machine.cpus)} logical CPUs, {len(cores)} cores, {len(packages)} package(s);"
        f" {len(machine.pci_devices)} PCI devices ({pci_by_node.get(None, 0)} without NUMA affinity)"
    )
    for attr in topology.attributes:
        lines.append(f"  {attr.name}: {attr.value}")
    for key, value in topology.annotations.items():
        lines.append(f"  annotation {key}: {value}")
    return "\n".join(lines) + "\n"
