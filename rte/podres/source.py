"""The one kubelet seam: what a kubelet reader offers its user (the agent), and what it returns.

A reader (:mod:`rte.podres.reader`: over the kubelet's gRPC socket, or a scenario directory)
answers :meth:`KubeletReader.list` with a :class:`Listing`: the pods, the digest of what the
kubelet sent (equal digests mean equal lists) and, when the reader knows it, how the pods differ
from its previous List by identity (:class:`PodChange`). The agent makes that one call per poll;
decoding, the wire-level shortcuts and the error mapping stay below it, in this package.

Errors: :class:`rte.errors.UnavailableError` when the data cannot be had right now (retry later),
its subclass :class:`rte.errors.NotSupportedError` when the backend does not offer the call at
all (degrade instead), :class:`rte.errors.InputError` for malformed data.

Kept free of grpc and protobuf imports so code that only needs the interface stays light.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from rte.podres.types import AllocatableResources, PodResources

# The kubelet's socket under its default root dir; the settings layer decides the real value.
DEFAULT_ENDPOINT = "unix:///var/lib/kubelet/pod-resources/kubelet.sock"


@dataclass(frozen=True)
class PodChange:
    """How one List's pods differ from the previous one's, by identity (a reader that knows it
    says so, and the tally then does no work for the pods that stayed).

    ``gone`` and ``new`` are multisets: an object listed twice and then once is ``gone`` once.
    """

    before: Sequence[PodResources]
    gone: Sequence[PodResources]
    new: Sequence[PodResources]


def identity_change(before: Sequence[PodResources], after: Sequence[PodResources]) -> PodChange:
    """The change from ``before`` to ``after``, found by comparing every object's identity."""
    if not before or not after:  # the first List (5000 ids boxed for nothing otherwise)
        return PodChange(before, list(before), list(after))
    old, now = Counter(map(id, before)), Counter(map(id, after))
    objects = {id(p): p for p in (*before, *after)}
    return PodChange(
        before,
        [objects[i] for i, n in (old - now).items() for _ in range(n)],
        [objects[i] for i, n in (now - old).items() for _ in range(n)],
    )


@dataclass(frozen=True)
class Listing:
    """One List result and its digest (equal digests mean equal lists).

    ``change``: how ``pods`` differ from the reader's previous List, by identity, when the
    reader knows (:class:`~rte.podres.reader.SocketReader`); the agent's pod tally
    (:mod:`rte.agent.compute.podtally`) then skips the pods that stayed.
    """

    digest: bytes
    pods: tuple[PodResources, ...]
    change: PodChange | None = field(default=None, compare=False, repr=False)


@runtime_checkable
class KubeletReader(Protocol):
    """The kubelet as the agent uses it (errors: see the module docstring).

    ``pod_limit``: the most pods one List answer may hold (None: no limit); a longer answer is
    refused with :class:`~rte.errors.InputError` (see :func:`rte.podres.reader.too_many_pods`).
    """

    endpoint: str
    pod_limit: int | None

    def wait_ready(self, timeout: float) -> None:
        """Block until the kubelet answers (UnavailableError after ``timeout`` seconds)."""
        ...

    def list(self) -> Listing: ...

    def get_allocatable(self) -> AllocatableResources: ...

    def close(self) -> None: ...
