"""Sums over the pods ``List`` reports, kept pod by pod across cycles: an unchanged pod costs nothing.

The agent lists the kubelet's pods twice a second and accounts the node again whenever anything
changed. Usually one pod changed among hundreds or thousands, yet accounting from the pods walks
every one of them (about 10 µs each: 51-61 ms a cycle at 5000 pods, issue #13). A
:class:`PodTally` keeps what each pod holds (:class:`PodFacts`, computed once per pod object)
and the sums over all listed pods that the accounting rules read
(:class:`~rte.agent.compute.ledger.Held`); a new List adds the facts of the pods it has not seen and
subtracts those of the pods that are gone.

Pods are known by identity: the socket reader hands out the same
:class:`~rte.podres.types.PodResources` object for a pod whose bytes did not change
(:class:`rte.podres.reader.SocketReader`), and the tally holds the last pods it synced to, so
no id is reused while counted. A reader that builds new objects every time (a scenario
directory) pays a full pass, as before, with the same result.

What is kept per pod is small (issue #27: at most 1 KiB a pod for the whole agent): its name,
counted in its namespace's dict (no key tuple), and its fingerprint hash in a sorted array.
Facts are kept only for the pods that hold something (exclusive CPUs, devices, memory blocks) or
give a finding alone, by id; a pod that holds nothing, most of a node's, has facts that its key
and hash say in full, so they are made again from the pod when it leaves. Every listing of a
pod is counted, so an object listed twice counts twice: its key then counts twice, which is what
makes the tally unclean, as before.

Exactness: the rules only add, unite and test membership, so the sums give the numbers
accounting from the pods gives. Findings need the pods themselves: while :attr:`PodTally.clean`
is False (a pod listed twice, a CPU or device held by two pods, a finding about one pod alone)
the accounting reads the pods, and so it does when a rule would note a finding about some
pod's holding (:class:`~rte.agent.compute.ledger.NeedsDetail`).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, insort
from collections.abc import Collection, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from rte.agent.compute.cpu_accounting import listed_cpus
from rte.agent.compute.device_accounting import held_devices
from rte.agent.compute.ledger import Held
from rte.agent.compute.listcheck import pod_is_clean
from rte.agent.compute.memory_accounting import held_memory
from rte.agent.compute.podset import SpecVerdicts, has_exclusive_assignment
from rte.model import fingerprint as fp
from rte.model.pod import PodKey
from rte.model.vocabulary import FingerprintMethod
from rte.podres.source import PodChange, identity_change
from rte.podres.types import NO_CPUS, PodResources

MemoryKey = tuple[tuple[int, ...], str]
"""(sorted NUMA ids, memory type) of a block."""

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class PodFacts:
    """What one pod holds, as the tally sums it. ``clean``: the pod alone gives no finding."""

    key: PodKey
    clean: bool
    cpus: frozenset[int]
    devices: frozenset[tuple[str, str]]
    memory: tuple[tuple[MemoryKey, int, int], ...]
    """Per block key: bytes and number of blocks."""
    exclusive: bool
    """The kubelet pinned something for it (the fingerprint's rule without pod specs)."""
    hash: int
    """Its fingerprint hash (:func:`rte.model.fingerprint.pod_hash`)."""

    @property
    def holds_nothing(self) -> bool:
        """Clean, not exclusive, no CPU, device or memory: :func:`facts_of_nothing` of its pod."""
        return self.clean and not (self.cpus or self.devices or self.memory or self.exclusive)


_NO_DEVICES: frozenset[tuple[str, str]] = frozenset()
"""Shared by the facts of every pod without devices (an empty frozenset is 216 bytes each)."""


def pod_facts(pod: PodResources) -> PodFacts:
    """The facts of one pod, computed by the same functions the accounting from pods uses."""
    memory: dict[MemoryKey, tuple[int, int]] = {}
    for _, ids, res, size in held_memory((pod,)):
        size_sum, blocks = memory.get((ids, res), (0, 0))
        memory[(ids, res)] = (size_sum + size, blocks + 1)
    return PodFacts(
        key=(pod.namespace, pod.name),
        clean=pod_is_clean(pod),
        cpus=listed_cpus((pod,)),
        devices=frozenset((res, device) for _, res, device in held_devices((pod,))) or _NO_DEVICES,
        memory=tuple((k, size, blocks) for k, (size, blocks) in memory.items()),
        exclusive=has_exclusive_assignment(pod),
        hash=fp.pod_hash(pod.namespace, pod.name),
    )


def facts_of_nothing(pod: PodResources) -> PodFacts:
    """The facts of a pod that holds nothing (:attr:`PodFacts.holds_nothing`), from its names."""
    return PodFacts(
        (pod.namespace, pod.name), True, NO_CPUS, _NO_DEVICES, (), False, fp.pod_hash(pod.namespace, pod.name)
    )


class ListedKeys(Collection[PodKey]):
    """The ``(namespace, name)`` of the listed pods, over the tally's names per namespace: no
    tuple is kept per pod (56 bytes each), the names are the listed pods' own strings."""

    def __init__(self, names: dict[str, dict[str, int]]) -> None:
        self._names = names

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple) or len(key) != 2:
            return False
        names = self._names.get(key[0])
        return names is not None and key[1] in names

    def __iter__(self) -> Iterator[PodKey]:
        for namespace, names in self._names.items():
            for name in names:
                yield namespace, name

    def __len__(self) -> int:
        return sum(map(len, self._names.values()))


class _Sorted:
    """Pod keys in sorted order, with their fingerprint hashes sorted alongside (8 bytes each)."""

    def __init__(self) -> None:
        self.keys: list[PodKey] = []
        self.hashes = array("Q")

    def add(self, facts: PodFacts) -> None:
        insort(self.keys, facts.key)
        insort(self.hashes, facts.hash)

    def remove(self, facts: PodFacts) -> None:
        del self.keys[bisect_left(self.keys, facts.key)]
        del self.hashes[bisect_left(self.hashes, facts.hash)]


class PodTally:
    """The sums over the pods of the last :meth:`sync`; one per reader, used by one thread."""

    def __init__(self) -> None:
        self._pods: Sequence[PodResources] = ()
        # id -> (facts, times listed) of the listed objects whose facts are not facts_of_nothing
        self._held: dict[int, tuple[PodFacts, int]] = {}
        self._names: dict[str, dict[str, int]] = {}  # namespace -> name -> times listed
        self._cpus: dict[int, int] = {}
        self._devices: dict[tuple[str, str], int] = {}
        self._memory: dict[MemoryKey, tuple[int, int]] = {}
        self._unclean = 0  # pods whose facts say they give a finding alone
        self._twice = 0  # pod keys, CPUs and devices counted more than once
        self._all_hashes = array("Q")  # sorted
        self._exclusive = _Sorted()
        self.facts_computed = 0
        """How many times a pod's facts were computed: what a changed pod costs, counted."""
        self.specs = SpecVerdicts()
        """The fingerprint's verdicts on the pod specs from the API, kept alongside."""

    @property
    def facts_kept(self) -> int:
        """How many listed objects have their facts kept (those that hold something)."""
        return len(self._held)

    @property
    def clean(self) -> bool:
        """True when accounting from the pods would note no finding about the List itself."""
        return not self._unclean and not self._twice

    def sync(self, pods: Sequence[PodResources], change: PodChange | None = None) -> None:
        """Bring the sums to ``pods``: only pods not counted yet have their facts computed.

        ``change``: how ``pods`` differ from the last synced ones, when the caller knows; used
        only if its ``before`` is those very pods (otherwise every identity is compared).
        """
        if pods is self._pods:
            return
        if change is None or change.before is not self._pods:
            change = identity_change(self._pods, pods)
        for pod in change.gone:
            self._drop(pod)
        for pod in change.new:
            self._take(pod)
        self._pods = pods

    def _take(self, pod: PodResources) -> None:
        held = self._held.get(id(pod))
        if held is not None:  # an object listed once more
            facts = held[0]
            self._held[id(pod)] = (facts, held[1] + 1)
        else:
            facts = pod_facts(pod)
            self.facts_computed += 1
            # Kept when they say more than the pod's names, or when its key is listed already (a
            # pod listed twice, maybe this very object: not computed again while it stays).
            if not facts.holds_nothing or facts.key in self.listed_keys():
                self._held[id(pod)] = (facts, 1)
        self._count(facts, +1)

    def _drop(self, pod: PodResources) -> None:
        # A kept entry's count never exceeds the times its object is listed (a pod of nothing
        # may be listed once more than counted), so no entry outlives its object.
        held = self._held.get(id(pod))
        if held is None:
            facts = facts_of_nothing(pod)
        elif held[1] > 1:
            facts = held[0]
            self._held[id(pod)] = (facts, held[1] - 1)
        else:
            facts = self._held.pop(id(pod))[0]
        self._count(facts, -1)

    def held(self) -> Held:
        """The sums, for the accounting rules (entries name no pod; see the module docstring)."""
        return Held(
            cpus=frozenset(self._cpus),
            memory=[("", ids, res, size) for (ids, res), (size, _) in self._memory.items()],
            devices=[("", res, device) for res, device in self._devices],
        )

    def listed_keys(self) -> ListedKeys:
        """The (namespace, name) of every listed pod."""
        return ListedKeys(self._names)

    def fingerprint(self, method: FingerprintMethod) -> tuple[tuple[PodKey, ...], str]:
        """The pods the fingerprint covers without pod specs or exclusions, and its value.

        Only meaningful while :attr:`clean` (every key listed once).
        """
        if method is FingerprintMethod.ALL:  # sorted here: a tuple kept per pod is 56 bytes
            return tuple(sorted(self.listed_keys())), fp.from_hashes(self._all_hashes)
        return tuple(self._exclusive.keys), fp.from_hashes(self._exclusive.hashes)

    def _count(self, facts: PodFacts, sign: int) -> None:
        namespace, name = facts.key
        names = self._names.get(namespace)
        if names is None:
            names = self._names[namespace] = {}
        self._twice += _bump(names, name, sign)
        if not names:
            del self._names[namespace]
        for cpu in facts.cpus:
            self._twice += _bump(self._cpus, cpu, sign)
        for device in facts.devices:
            self._twice += _bump(self._devices, device, sign)
        for key, size, blocks in facts.memory:
            old_size, old_blocks = self._memory.get(key, (0, 0))
            if old_blocks + sign * blocks:
                self._memory[key] = (old_size + sign * size, old_blocks + sign * blocks)
            else:
                del self._memory[key]
        if not facts.clean:
            self._unclean += sign
        if sign > 0:
            insort(self._all_hashes, facts.hash)
        else:
            del self._all_hashes[bisect_left(self._all_hashes, facts.hash)]
        if facts.exclusive:
            change = self._exclusive.add if sign > 0 else self._exclusive.remove
            change(facts)


def _bump(counts: dict[K, int], key: K, sign: int) -> int:
    """Count ``key`` once more (sign +1) or less (-1); return the change in keys counted twice or more."""
    before = counts.get(key, 0)
    after = before + sign
    if after:
        counts[key] = after
    else:
        del counts[key]
    if before < 2 <= after:
        return 1
    if after < 2 <= before:
        return -1
    return 0
