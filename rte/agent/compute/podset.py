"""Which pods the published fingerprint covers (the agent's half of the resync contract).

The scheduler's reserve cache recomputes the fingerprint from the pods it sees in the API and
adopts our NRT only when the two match, so our pod set must be the one the scheduler computes
for this node, and must never claim a pod our accounting has not seen yet:

* With pod specs from the API (the daemon watches the pods bound to its node), a pod counts when
  the consumer's informer mode counts it (``Dedicated``: bound and not Pending, terminal pods
  included; ``Shared``: Running) **and** the kubelet already lists it, or it is terminal (its
  resources are released, so counting it claims nothing). A Running pod the kubelet does not
  list yet is left out: the fingerprints then differ until the next cycle, the safe direction.
  ``with-exclusive-resources`` keeps the pods the shared spec rule
  (:func:`rte.model.exclusive.is_exclusive`) calls exclusive against the resources we publish.
* Without specs (``rte dump``, a laptop), every listed pod counts for ``all``; for
  ``with-exclusive-resources`` a pod counts when the kubelet assigned it exclusive CPUs, memory
  blocks or NUMA-local devices (the reference agent's rule, an approximation of the spec rule).

Exclusion globs (``namespace/name`` shell patterns) drop pods from the set; the consumer must be
told to ignore the same pods, or fingerprints will never match.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from rte.agent.compute.podspec import PodSpec
from rte.model import fingerprint as fp
from rte.model.exclusive import is_exclusive
from rte.model.pod import Pod, counts_for_fingerprint
from rte.model.vocabulary import FingerprintMethod, InformerMode
from rte.podres.types import PodResources


@dataclass(frozen=True)
class PodGlob:
    """A ``namespace/name`` pair of shell globs; a bare pattern matches names in any namespace."""

    namespace: str
    name: str

    @classmethod
    def parse(cls, text: str) -> PodGlob:
        namespace, sep, name = text.partition("/")
        return cls(namespace, name) if sep else cls("*", namespace)

    def matches(self, namespace: str, name: str) -> bool:
        return fnmatchcase(namespace, self.namespace) and fnmatchcase(name, self.name)


def has_exclusive_assignment(pod: PodResources) -> bool:
    """What the kubelet pinned: exclusive CPUs, NUMA-bound memory, or NUMA-local devices."""
    if pod.cpu_ids or any(b.numa_ids for b in pod.memory):
        return True
    for c in pod.containers:
        if c.cpu_ids or any(b.numa_ids for b in c.memory):
            return True
        if any(d.device_ids and d.numa_ids for d in c.devices):
            return True
    return False


SpecMapping = Mapping[tuple[str, str], Pod | PodSpec]
"""The pods bound to the node, ``(namespace, name)`` -> the pod as the agent's pod watch keeps it
(:class:`~rte.agent.compute.podspec.PodSpec`) or as a caller holding whole pods has it (the
simulator, tests)."""


def spec_verdict(
    pod: Pod | PodSpec,
    method: FingerprintMethod,
    published_resources: Collection[str],
    informer_mode: InformerMode,
) -> tuple[bool, bool]:
    """Whether the fingerprint covers ``pod`` once the kubelet lists it, and whether it is
    terminal (then it is covered listed or not)."""
    exclusive_only = method is FingerprintMethod.WITH_EXCLUSIVE_RESOURCES
    if isinstance(pod, PodSpec):
        eligible = pod.counts_for_fingerprint(informer_mode) and (
            not exclusive_only or pod.is_exclusive(published_resources)
        )
    else:
        eligible = counts_for_fingerprint(pod, informer_mode) and (
            not exclusive_only or is_exclusive(pod, published_resources)
        )
    return eligible, pod.is_terminal


def with_departed(
    specs: SpecMapping,
    before: SpecMapping,
    listed: Collection[tuple[str, str]],
) -> SpecMapping:
    """``specs``, plus the pods of ``before`` (the specs the last computation used) that the API
    no longer has but the kubelet still lists, with their last spec.

    The API deletes a pod a moment before the kubelet's List drops it (the kubelet removes it
    from its active pods once it sees the deletion). Left to the pod watch alone, the fingerprint
    would drop the pod at once and the zones would free its resources one List later: two writes
    for one removal. Keeping the pod until the List in use drops it makes one List snapshot
    decide both (issue #26 item 8). Meanwhile the fingerprint still names a pod the scheduler
    no longer sees, so the two differ for that moment: the safe direction, as for a pod the
    kubelet does not list yet (the NRT still charges the pod's resources either way).
    """
    departed = {k: p for k, p in before.items() if k not in specs and k in listed}
    return {**specs, **departed} if departed else specs


def fingerprint_pods(
    listed: Sequence[PodResources],
    method: FingerprintMethod,
    *,
    specs: SpecMapping | None = None,
    published_resources: Collection[str] = (),
    informer_mode: InformerMode = InformerMode.DEDICATED,
    exclude: Iterable[PodGlob] = (),
) -> list[tuple[str, str]]:
    """The ``(namespace, name)`` pairs the fingerprint covers, in a stable order."""
    globs = tuple(exclude)
    chosen: list[tuple[str, str]] = []
    if specs is not None:
        listed_keys = {(p.namespace, p.name) for p in listed}
        for key, pod in specs.items():
            eligible, terminal = spec_verdict(pod, method, published_resources, informer_mode)
            if eligible and (terminal or key in listed_keys):
                chosen.append(key)
    else:
        for p in listed:
            if method is FingerprintMethod.ALL or has_exclusive_assignment(p):
                chosen.append((p.namespace, p.name))
    return sorted(k for k in chosen if not any(g.matches(*k) for g in globs))


class SpecVerdicts:
    """:func:`fingerprint_pods` with pod specs, for the daemon: its pod watch keeps
    :class:`~rte.agent.compute.podspec.PodSpec` records, whose verdicts cost a few attribute
    reads, and a pod's hash is under a microsecond (its namespace's seed is cached), so nothing
    is kept per pod across cycles (issue #27: at most 1 KiB a pod) but the exclusion globs'
    verdicts (matching a glob costs microseconds), and those only while there are globs. Used
    by one thread.
    """

    def __init__(self) -> None:
        self._globs: tuple[PodGlob, ...] = ()
        self._excluded: dict[tuple[str, str], bool] = {}
        self.matched = 0
        """How many pod keys were matched against the globs: what a new pod costs, counted."""

    def fingerprint(
        self,
        specs: SpecMapping,
        listed_keys: Collection[tuple[str, str]],
        method: FingerprintMethod,
        *,
        published_resources: Collection[str],
        informer_mode: InformerMode,
        exclude: Iterable[PodGlob] = (),
    ) -> tuple[tuple[tuple[str, str], ...], str]:
        """The pairs :func:`fingerprint_pods` chooses for ``specs`` and the pods whose keys are
        ``listed_keys``, and their fingerprint."""
        globs = tuple(exclude)
        before = self._excluded if globs == self._globs else {}
        excluded: dict[tuple[str, str], bool] = {}
        # The verdict of each record object, once per call: the pod watch shares one record
        # between the pods alike to the rule, so a node of 5000 pods has a handful.
        verdicts: dict[int, tuple[bool, bool]] = {}
        pod_hash = fp.pod_hash
        chosen = []
        for key, pod in specs.items():
            verdict = verdicts.get(id(pod))
            if verdict is None:
                verdict = verdicts[id(pod)] = spec_verdict(pod, method, published_resources, informer_mode)
            if globs:
                out = before.get(key)
                if out is None:
                    out = any(g.matches(*key) for g in globs)
                    self.matched += 1
                excluded[key] = out
                if out:
                    continue
            eligible, terminal = verdict
            if eligible and (terminal or key in listed_keys):
                chosen.append((key, pod_hash(*key)))
        self._globs, self._excluded = globs, excluded
        chosen.sort()
        return tuple(k for k, _ in chosen), fp.from_hashes(h for _, h in chosen)
