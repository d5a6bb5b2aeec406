"""What every podresources backend offers: the gRPC client and the file-backed lister.

Kept free of grpc and protobuf imports so code that only needs the interface stays light.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from rte.podres.types import AllocatableResources, PodResources

# The kubelet's socket under its default root dir; the settings layer decides the real value.
DEFAULT_ENDPOINT = "unix:///var/lib/kubelet/pod-resources/kubelet.sock"


@runtime_checkable
class PodResourcesSource(Protocol):
    """The three podresources v1 calls, returning :mod:`rte.podres.types`.

    Errors: :class:`rte.errors.UnavailableError` when the data cannot be had right now (retry
    later), its subclass :class:`rte.errors.NotSupportedError` when the backend does not offer the
    call at all (degrade instead), :class:`rte.errors.InputError` for malformed data.
    """

    def list(self) -> tuple[PodResources, ...]:
        """Every pod the kubelet tracks (a full snapshot)."""
        ...

    def get_allocatable(self) -> AllocatableResources:
        """Node-wide allocatable CPUs, devices and memory."""
        ...

    def get(self, namespace: str, name: str) -> PodResources | None:
        """One pod, or None when the kubelet does not know it."""
        ...
