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


def fingerprint_pods(
    listed: Sequence[PodResources],
    method: FingerprintMethod,
    *,
    specs: Mapping[tuple[str, str], Pod] | None = None,
    published_resources: Collection[str] = (),
    informer_mode: InformerMode = InformerMode.DEDICATED,
    exclude: Iterable[PodGlob] = (),
    listed_keys: Collection[tuple[str, str]] | None = None,
) -> list[tuple[str, str]]:
    """The ``(namespace, name)`` pairs the fingerprint covers, in a stable order.

    ``listed_keys``: those of ``listed``, when the caller has them already.
    """
    globs = tuple(exclude)
    if listed_keys is None:
        listed_keys = {(p.namespace, p.name) for p in listed}
    chosen: list[tuple[str, str]] = []
    if specs is not None:
        for key, pod in specs.items():
            if not counts_for_fingerprint(pod, informer_mode):
                continue
            if key not in listed_keys and not pod.is_terminal:
                continue
            if method is FingerprintMethod.WITH_EXCLUSIVE_RESOURCES and not is_exclusive(
                pod, published_resources
            ):
                continue
            chosen.append(key)
    else:
        for p in listed:
            if method is FingerprintMethod.ALL or has_exclusive_assignment(p):
                chosen.append((p.namespace, p.name))
    return sorted(k for k in chosen if not any(g.matches(*k) for g in globs))
