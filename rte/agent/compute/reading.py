"""One reading of a node: everything the object to publish is computed from, as one value.

Readers produce it (the daemon's :class:`~rte.agent.scanner.Scanner`, which ``rte dump`` uses
once, and the simulator's agent over its simulated kubelet); the pure
:func:`rte.agent.compute.topology.compute_topology` turns it into the object. A new input (another
podresources field, another checkpoint file) is one field here, filled by the readers and used
by the accounting, with nothing in between passing it along.

These types live in the agent, not in :mod:`rte.model`: they hold what the agent's host and
kubelet readers return (sysfs, kubelet config and checkpoint files, podresources), and the model
is shared with the consumer, which must never depend on those.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rte.agent.compute.podset import PodGlob, SpecMapping
from rte.agent.compute.podtally import PodTally
from rte.host.kubelet_config import KubeletConfig
from rte.host.kubelet_state import CpuManagerState, MemoryManagerState
from rte.host.machine import Machine
from rte.model.quantity import Amount
from rte.model.vocabulary import FingerprintMethod, InformerMode, NumaPlacementMode, ZoneNames
from rte.podres.types import AllocatableResources, PodResources


@dataclass(frozen=True)
class Checkpoints:
    """The kubelet's resource manager checkpoint files, each None when absent or unreadable.

    Optional truth: accounting works from podresources alone and uses a checkpoint to add what
    podresources cannot say: the CPUs and memory finished init containers still hold, and how a
    multi-NUMA memory block was split. Where the two disagree, accounting never takes the more
    optimistic one (:mod:`rte.agent.compute.cpu_accounting`, :mod:`rte.agent.compute.memory_accounting`).
    """

    memory: MemoryManagerState | None = None
    cpu: CpuManagerState | None = None


NO_CHECKPOINTS = Checkpoints()


@dataclass(frozen=True)
class KubeletReading:
    """What the kubelet said: podresources ``GetAllocatableResources`` and ``List``, and checkpoints.

    ``allocatable`` None: the kubelet does not offer GetAllocatableResources, so allocatable is
    derived from sysfs and the kubelet config. ``tally``: the reader's running sums over its
    pods, which the computation brings up to ``pods`` and reads instead of walking every pod
    (:mod:`rte.agent.compute.podtally`); a memo only, the object is the same without it.
    """

    allocatable: AllocatableResources | None
    pods: tuple[PodResources, ...]
    checkpoints: Checkpoints = NO_CHECKPOINTS
    tally: PodTally | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class PublishingRules:
    """The operator's choices about the fingerprint: which pods it covers, and which it leaves out.

    ``informer_mode`` is the consumer's (it decides which pods the consumer counts, so ours must
    agree); ``exclude`` must match the consumer's exclusions too. ``numa_placement`` says whether
    the numaplacement attributes are published (:mod:`rte.agent.compute.placement`);
    ``zone_names`` how the zones are numbered (:mod:`rte.agent.compute.zonenames`).
    """

    method: FingerprintMethod
    informer_mode: InformerMode = InformerMode.DEDICATED
    exclude: tuple[PodGlob, ...] = ()
    numa_placement: NumaPlacementMode = NumaPlacementMode.CONTAINER
    zone_names: ZoneNames = ZoneNames.NUMA_ID


@dataclass(frozen=True)
class NodeReading:
    """Everything one computation of the node's object needs.

    ``config`` None: no kubelet config known (no Topology Manager attributes). ``kubelet`` None:
    no kubelet answered (``rte dump`` away from a node): hardware capacity, no fingerprint.
    ``specs`` are the pods bound to this node as the API has them (the daemon's pod watch); they
    switch the fingerprint to the spec rule. ``zone_attributes`` (NUMA id -> attributes, e.g. the
    zone load) are added to the zones. ``last_consistent`` is what the last consistent computation
    left available per (zone name, resource); a computation whose kubelet data contradicts itself
    publishes no more than that (:func:`rte.agent.compute.topology.compute_topology`).
    """

    node_name: str
    machine: Machine
    config: KubeletConfig | None
    kubelet: KubeletReading | None
    rules: PublishingRules
    specs: SpecMapping | None = None
    zone_attributes: Mapping[int, Mapping[str, str]] = field(default_factory=dict)
    last_consistent: Mapping[tuple[str, str], Amount] = field(default_factory=dict)
