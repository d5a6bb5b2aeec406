"""The ``cpu`` of every zone, and the CPU manager facts the NRT carries for admission.

NUMA-bound (CPU manager ``static``): allocatable = the zone's CPUs among
``GetAllocatableResources.cpu_ids``; available = allocatable minus the CPUs held exclusively.
Held is the union of two sources, so the result is never more optimistic than either:

* podresources ``List``: every pod's container-level and pod-level ``cpu_ids`` (pod-level ids
  include the container-level ones, so they are united, never added);
* the CPU manager's checkpoint (``cpu_manager_state``, when readable and ``static``): every
  ``entries``/``podEntries`` cpuset, and every CPU missing from ``defaultCpuSet`` (the shared
  pool). It holds what ``List`` never reports: the CPUs of finished init containers that no app
  container reused, kept for the pod's life (kubernetes/kubernetes
  ``pkg/kubelet/cm/cpumanager/policy_static.go``, ``updateCPUsToReuse``).

The two disagree only for a moment: a pod just admitted is in ``List`` before the checkpoint copy
catches up (at most a second in the DaemonSet), and a pod just removed stays in the checkpoint
until the CPU manager's reconcile loop drops it (``removeStaleState``, every
``cpuManagerReconcilePeriod``). Either way the union charges the CPUs until both agree.

Not NUMA-bound (``none``): every zone advertises the node's whole CPU pool (the kubelet pins
nothing, so a CPU request never causes a TopologyAffinityError).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from rte.agent.compute.ledger import CPU, Ledger
from rte.host.kubelet_config import KubeletConfig
from rte.host.kubelet_state import CpuManagerState
from rte.host.machine import Machine
from rte.model.cpuset import format_cpuset
from rte.model.quantity import Amount
from rte.podres.types import NO_CPUS, AllocatableResources, PodResources


def threads_per_core(machine: Machine) -> int | None:
    """Logical CPUs per physical core, as the CPU manager counts them (``CPUsPerCore()``: CPUs
    over cores, in integers); None when sysfs names no thread siblings."""
    cores = machine.core_groups()
    if not cores:
        return None
    return len(frozenset().union(*cores)) // len(cores)


def numa_sockets(machine: Machine) -> Mapping[int, frozenset[int]]:
    """NUMA id -> the sockets (``physical_package_id``) of the CPUs in its ``cpulist``, for every
    NUMA node with CPUs; empty when some CPU's socket is unknown (a partial map would make the
    consumer count sockets wrong, so it gets none and falls back to its rules without sockets).

    The CPU manager learns the same relation from cAdvisor (kubernetes/kubernetes
    ``pkg/kubelet/cm/cpumanager/topology/topology.go`` ``Discover``: each CPU's ``SocketID`` and
    ``NUMANodeID``). Computed once per machine (the agent asks every cycle)."""
    return machine.numa_sockets


def listed_cpus(pods: Sequence[PodResources]) -> frozenset[int]:
    """Every CPU ``List`` reports as exclusively assigned (pod-level and container-level, united)."""
    assigned: set[int] = set()
    for pod in pods:
        assigned |= pod.cpu_ids
        for container in pod.containers:
            assigned |= container.cpu_ids
    return frozenset(assigned) if assigned else NO_CPUS


def checkpoint_cpus(state: CpuManagerState, machine_cpus: frozenset[int]) -> frozenset[int]:
    """The CPUs the CPU manager's checkpoint holds exclusively; empty unless its policy is static."""
    if state.policy != "static":
        return frozenset()
    held = state.exclusive_cpus
    if state.default_cpuset:
        # An empty shared pool only exists in a state file the kubelet has not initialised yet.
        held |= machine_cpus - state.default_cpuset
    return held


def account_cpu_bound(
    ledger: Ledger,
    machine: Machine,
    config: KubeletConfig | None,
    allocatable: AllocatableResources | None,
    listed: frozenset[int],
    state: CpuManagerState | None,
) -> int:
    """Charge the held CPUs per zone; return the CPU manager's count of free physical CPUs.

    That count is what the ``full-pcpus-only`` check compares a request with
    (kubernetes/kubernetes ``pkg/kubelet/cm/cpumanager/policy_static.go``,
    ``GetAvailablePhysicalCPUs``): the shared pool minus every reserved CPU and its core
    siblings. Reserved CPUs are those the kubelet does not offer as allocatable. ``listed``: the
    CPUs ``List`` reports as assigned (:func:`listed_cpus`).
    """
    cpu_node = machine.cpu_to_node()
    machine_cpus = frozenset(cpu_node)
    if allocatable is not None and allocatable.cpu_ids:
        alloc_cpus = allocatable.cpu_ids
    else:
        reserved = config.reserved_system_cpus if config else frozenset()
        alloc_cpus = machine_cpus - reserved
    for cpu in sorted(alloc_cpus - machine_cpus):
        ledger.note("unknown_cpu", f"allocatable CPU {cpu} is not on any NUMA node of this machine")
    for cpu in sorted(listed - alloc_cpus):
        ledger.note("unknown_cpu", f"assigned CPU {cpu} is not allocatable")
    held = listed
    if state is not None:
        from_checkpoint = checkpoint_cpus(state, machine_cpus)
        stray = from_checkpoint - machine_cpus
        if stray:
            ledger.note(
                "unknown_cpu",
                f"cpu_manager_state assigns CPUs {format_cpuset(stray)}, which this machine lacks",
            )
        held = held | from_checkpoint
    for zone in ledger.zones:
        zone_cpus = machine.node(zone).cpus
        amounts = ledger.at(zone, CPU)
        amounts.capacity = len(zone_cpus)
        amounts.allocatable = len(zone_cpus & alloc_cpus)
        amounts.used = len(zone_cpus & alloc_cpus & held)
    reserved_physical: set[int] = set()
    for cpu in machine_cpus - alloc_cpus:
        reserved_physical |= machine.cpus[cpu].thread_siblings | {cpu}
    return len(machine_cpus - held - reserved_physical)


def node_cpu_allocatable(machine: Machine, config: KubeletConfig | None) -> Amount:
    """The node's allocatable CPUs without the CPU manager: all CPUs minus the reservations."""
    total = len(machine.cpus)
    if config is None:
        return total
    if config.reserved_system_cpus:
        return total - len(config.reserved_system_cpus & frozenset(machine.cpus))
    reserved_milli = config.kube_reserved.get(CPU, 0) + config.system_reserved.get(CPU, 0)
    value = Fraction(total * 1000 - reserved_milli, 1000)
    return max(0, value.numerator if value.denominator == 1 else value)


def account_cpu_pool(ledger: Ledger, machine: Machine, config: KubeletConfig | None) -> None:
    """CPU manager ``none``: the node's whole pool in every zone."""
    pool = node_cpu_allocatable(machine, config)
    for zone in ledger.zones:
        amounts = ledger.at(zone, CPU)
        amounts.capacity = len(machine.cpus)
        amounts.allocatable = pool
