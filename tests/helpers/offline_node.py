"""A real machine with one NUMA node offline: sparse NUMA ids 0, 2, 3.

Derived at test time from tests/fixtures/sysfs/intel-2s-snc2-4numa-80t-hugepages (its NOTICE says
where it comes from and its license) by doing to a copy what the kernel shows once node 1 is
offline and its CPUs are gone: no ``node1`` directory; node 1 left out of ``node/online``,
``has_cpu``, ``has_memory`` and ``has_normal_memory`` (``possible`` keeps it); its CPUs' directories
removed and left out of ``cpu/online`` and ``cpu/present``; and every other node's ``distance`` row
printed for the online nodes only (the kernel's ``node_read_distance`` walks the online nodes),
so node 1's column is dropped. Nothing else changes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from rte.model.cpuset import format_cpuset, parse_cpuset
from tests.helpers.paths import SYSFS_FIXTURES

SOURCE = SYSFS_FIXTURES / "intel-2s-snc2-4numa-80t-hugepages" / "sys"
OFFLINE = 1
NODE_IDS = (0, 2, 3)


def _without(path: Path, ids: set[int]) -> None:
    path.write_text(format_cpuset(set(parse_cpuset(path.read_text().strip())) - ids) + "\n")


def offline_node_sysfs(into: Path) -> Path:
    """Write the derived tree under ``into`` and return its sysfs root (the ``sys`` directory)."""
    root = into / "sys"
    shutil.copytree(SOURCE, root, symlinks=True)
    system = root / "devices" / "system"
    nodes, cpus = system / "node", system / "cpu"
    online_before = sorted(parse_cpuset((nodes / "online").read_text().strip()))
    gone_cpus = set(parse_cpuset((nodes / f"node{OFFLINE}" / "cpulist").read_text().strip()))
    shutil.rmtree(nodes / f"node{OFFLINE}")
    for name in ("online", "has_cpu", "has_memory", "has_normal_memory"):
        _without(nodes / name, {OFFLINE})
    column = online_before.index(OFFLINE)
    for node in NODE_IDS:
        row = (nodes / f"node{node}" / "distance").read_text().split()
        del row[column]
        (nodes / f"node{node}" / "distance").write_text(" ".join(row) + "\n")
    for cpu in gone_cpus:
        shutil.rmtree(cpus / f"cpu{cpu}", ignore_errors=True)
    for name in ("online", "present"):
        _without(cpus / name, gone_cpus)
    return root
