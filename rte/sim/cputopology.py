"""Where every logical CPU of a simulated node sits: what the simulated CPU manager
(:mod:`rte.sim.cpus`, :mod:`rte.sim.sockets`) allocates over."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class CpuTopology:
    """Where every logical CPU of a simulated node sits."""

    zone_of: Mapping[int, int]
    """CPU id -> NUMA zone (and socket: one per zone)."""
    core_of: Mapping[int, int]
    """CPU id -> core id (the lowest CPU id among the core's threads)."""
    zone_size: Mapping[int, int]
    """NUMA zone -> every CPU of it, reserved ones included."""
    threads_per_core: int
    socket_of: Mapping[int, int] | None = None
    """NUMA zone -> its socket when zones nest in sockets (:mod:`rte.sim.sockets`); None: one
    socket per zone."""
    align_by_socket: bool = False
    """The CPU manager option ``align-by-socket``: a hint stands for its sockets' CPUs."""

    def sockets(self) -> Mapping[int, int]:
        """:attr:`socket_of`, on hardware whose zones nest in sockets (the only callers)."""
        assert self.socket_of is not None
        return self.socket_of
