"""Write the synthetic Grace-Blackwell-class sysfs fixture under tests/fixtures/sysfs/.

The shape follows what NVIDIA documents for Grace-based superchips (Grace CPU Superchip and
GH200/GB200 tuning guides: each Grace is one NUMA node of 72 Arm Neoverse V2 cores without SMT
and its LPDDR5X; each GPU's HBM is a CPU-less NUMA node; the driver reserves further empty,
CPU-less NUMA nodes per GPU for MIG memory partitions, online but holding no memory until
used) and KEP-5726's description of such machines. No real tree was available to copy: every
value here is made up within that shape and FIXTURE.json says which facts the tree yields.

Run from the repository root: ``python hack/make_grace_sysfs.py``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

NAME = "grace-blackwell-2s-18numa-144c-synthetic"
ROOT = Path("tests/fixtures/sysfs") / NAME
GRACES = 2
CORES = 72
GPUS_PER_GRACE = 2
MIG_NODES_PER_GPU = 3
LPDDR_KB = 480 * 1024 * 1024  # 480 GiB per Grace
HBM_KB = 186 * 1024 * 1024  # 186 GiB per GPU

# Node ids: the Graces first (0-1), then per GPU its HBM node and its empty MIG nodes.
cpu_nodes = list(range(GRACES))
gpu_nodes: list[tuple[int, int, list[int]]] = []  # (grace, hbm node, mig nodes)
next_id = GRACES
for grace in range(GRACES):
    for _ in range(GPUS_PER_GRACE):
        hbm = next_id
        migs = list(range(hbm + 1, hbm + 1 + MIG_NODES_PER_GPU))
        gpu_nodes.append((grace, hbm, migs))
        next_id = migs[-1] + 1
count = next_id
home = {n: n for n in cpu_nodes}
for grace, hbm, migs in gpu_nodes:
    for n in (hbm, *migs):
        home[n] = grace


def distance(a: int, b: int) -> int:
    if a == b:
        return 10
    if a in cpu_nodes and b in cpu_nodes:
        return 40
    if a in cpu_nodes or b in cpu_nodes:
        cpu, other = (a, b) if a in cpu_nodes else (b, a)
        return 80 if home[other] == cpu else 120
    return 80 if home[a] == home[b] else 160


def cpulist(ids: list[int]) -> str:
    """Kernel list syntax of ascending ids: runs as ``a-b``, joined by commas."""
    runs: list[list[int]] = []
    for i in ids:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def main() -> None:
    shutil.rmtree(ROOT, ignore_errors=True)
    node_dir = ROOT / "sys/devices/system/node"
    cpu_dir = ROOT / "sys/devices/system/cpu"
    memory = {n: LPDDR_KB for n in cpu_nodes} | {hbm: HBM_KB for _, hbm, _ in gpu_nodes}
    every = f"0-{count - 1}"
    with_memory = sorted(memory)
    files = {
        "online": every,
        "possible": every,
        "has_cpu": cpulist(cpu_nodes),
        "has_memory": cpulist(with_memory),
        "has_normal_memory": cpulist(cpu_nodes),
    }
    node_dir.mkdir(parents=True)
    for name, text in files.items():
        (node_dir / name).write_text(text + "\n")
    facts = {}
    for n in range(count):
        d = node_dir / f"node{n}"
        (d / "hugepages/hugepages-2048kB").mkdir(parents=True)
        cpus = list(range(n * CORES, (n + 1) * CORES)) if n in cpu_nodes else []
        (d / "cpulist").write_text(cpulist(cpus) + "\n")
        row = [distance(n, m) for m in range(count)]
        (d / "distance").write_text(" ".join(map(str, row)) + "\n")
        total = memory.get(n, 0)
        used = 2 * 1024 * 1024 if n in cpu_nodes else 0
        (d / "meminfo").write_text(
            f"Node {n} MemTotal:       {total} kB\n"
            f"Node {n} MemFree:        {total - used} kB\n"
            f"Node {n} MemUsed:        {used} kB\n"
        )
        hp = d / "hugepages/hugepages-2048kB"
        (hp / "nr_hugepages").write_text("0\n")
        (hp / "free_hugepages").write_text("0\n")
        facts[str(n)] = {
            "cpulist": cpulist(cpus),
            "ncpus": len(cpus),
            "memtotal_kb": total,
            "distance": row,
            "hugepages": {"hugepages-2048kB": {"nr": 0, "free": 0}},
        }
    all_cpus = list(range(GRACES * CORES))
    for name in ("online", "possible", "present"):
        (cpu_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (cpu_dir / name).write_text(cpulist(all_cpus) + "\n")
    for cpu in all_cpus:
        t = cpu_dir / f"cpu{cpu}/topology"
        t.mkdir(parents=True)
        grace = cpu // CORES
        (t / "core_id").write_text(f"{cpu % CORES}\n")
        (t / "physical_package_id").write_text(f"{grace}\n")
        (t / "die_id").write_text("0\n")
        (t / "thread_siblings_list").write_text(f"{cpu}\n")
        (t / "core_siblings_list").write_text(cpulist(list(range(grace * CORES, (grace + 1) * CORES))) + "\n")
    (ROOT / "NOTICE").write_text(
        f"Data: synthetic sysfs tree {NAME}, written by hack/make_grace_sysfs.py (no real tree was\n"
        "available): a Grace-Blackwell-class node, 2 Grace CPUs (72 cores each, no SMT, one socket\n"
        "each) with LPDDR5X, 4 GPUs whose HBM is a CPU-less NUMA node each, and 3 empty CPU-less\n"
        "NUMA nodes per GPU (reserved for MIG memory partitions). Shape from NVIDIA's public Grace\n"
        "tuning guides and KEP-5726; values made up. License: same as the rest of rte's own files.\n"
    )
    (ROOT / "FIXTURE.json").write_text(
        json.dumps(
            {
                "name": NAME,
                "synthetic": True,
                "machine": (
                    f"{GRACES} sockets x {CORES} cores, no SMT; {count} NUMA nodes: CPU nodes"
                    f" {cpulist(cpu_nodes)}, HBM nodes {[h for _, h, _ in gpu_nodes]}, the rest empty"
                ),
                "expected_facts_parsed_from_tree": {
                    "node_files": files,
                    "numa_nodes": facts,
                    "cpu": {
                        "online_file": cpulist(all_cpus),
                        "present_file": cpulist(all_cpus),
                        "cpu_dirs": len(all_cpus),
                        "packages": {
                            str(g): cpulist(list(range(g * CORES, (g + 1) * CORES))) for g in range(GRACES)
                        },
                        "physical_cores": len(all_cpus),
                        "threads_per_core_histogram": {"1": len(all_cpus)},
                    },
                    "pci": {"count_by_numa_node": {}, "interesting_devices(net/display/accel/nvme)": []},
                },
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
