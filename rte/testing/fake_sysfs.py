"""Write a minimal sysfs tree that matches a synthetic podresources scenario (rte.testing.scenarios).

Only what the agent reads: ``devices/system/node`` (online and the other id sets; per node
``cpulist``, ``meminfo``, ``distance`` and the 1Gi hugepage pool) and ``devices/system/cpu``
(online/present/possible and one ``cpuN/topology`` each, two threads per core). Each zone's
``MemTotal`` is its allocatable memory plus its hugepage pool plus a little the kubelet reserves,
so the agent's accounting sees a consistent machine.

    python -m rte.testing.fake_sysfs OUT_DIR        # OUT_DIR/sys is the sysfs root
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rte.model.cpuset import format_cpuset
from rte.testing.scenarios import GiB, Scenario, large_node

RESERVED_PER_ZONE = GiB // 2


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def write_sysfs(root: str | Path, scenario: Scenario) -> Path:
    """Write the tree under ``root`` (which becomes the sysfs root) and return it."""
    sysfs = Path(root)
    node_dir = sysfs / "devices" / "system" / "node"
    cpu_dir = sysfs / "devices" / "system" / "cpu"
    ids = scenario.numa_ids
    all_ids = format_cpuset(ids) + "\n"
    for name in ("online", "possible", "has_cpu", "has_memory", "has_normal_memory"):
        _write(node_dir / name, all_ids)
    memory = scenario.zone_memory.get("memory", 0)
    hugepages_1g = scenario.zone_memory.get("hugepages-1Gi", 0) // GiB
    all_cpus = sorted(c for cpus in scenario.zone_cpus.values() for c in cpus)
    for zone in ids:
        node = node_dir / f"node{zone}"
        cpus = scenario.zone_cpus[zone]
        _write(node / "cpulist", format_cpuset(cpus) + "\n")
        total_kb = (memory + hugepages_1g * GiB + RESERVED_PER_ZONE) // 1024
        _write(
            node / "meminfo",
            f"Node {zone} MemTotal:       {total_kb} kB\nNode {zone} MemFree: {total_kb // 2} kB\n",
        )
        _write(node / "distance", " ".join("10" if other == zone else "20" for other in ids) + "\n")
        pool = node / "hugepages" / "hugepages-1048576kB"
        _write(pool / "nr_hugepages", f"{hugepages_1g}\n")
        _write(pool / "free_hugepages", f"{hugepages_1g}\n")
        for i, cpu in enumerate(cpus):
            sibling = cpus[i ^ 1] if (i ^ 1) < len(cpus) else cpu
            topo = cpu_dir / f"cpu{cpu}" / "topology"
            _write(topo / "physical_package_id", f"{ids.index(zone) // 2}\n")
            _write(topo / "core_id", f"{i // 2}\n")
            _write(topo / "thread_siblings_list", format_cpuset({cpu, sibling}) + "\n")
            _write(topo / "core_siblings_list", format_cpuset(cpus) + "\n")
    for name in ("online", "present", "possible"):
        _write(cpu_dir / name, format_cpuset(all_cpus) + "\n")
    return sysfs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rte.testing.fake_sysfs",
        description="Write a sysfs tree matching a synthetic scenario.",
    )
    parser.add_argument("out", type=Path, help="directory to create; OUT/sys is the sysfs root")
    args = parser.parse_args(argv)
    scenario = large_node()
    scenario.write(args.out / "scenario", ("pb",))
    write_sysfs(args.out / "sys", scenario)
    print(f"sysfs root {args.out / 'sys'}; podresources scenario {args.out / 'scenario'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
