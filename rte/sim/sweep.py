"""The headline sweep: agent cadence x cache mode x cluster size, one simulation each.

The workload scales with the cluster: pods, burst size and an explicit Poisson rate are
multiplied by ``nodes / base.nodes`` (a rate derived from ``load`` scales by itself), so every
size sees the same per-node pressure. Everything else, the seed included, is the base config's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rte.sim.config import SWEEP_CACHES, SWEEP_INTERVALS, SWEEP_NODES, SimConfig
from rte.sim.engine import run_simulation
from rte.sim.result import SimResult
from rte.sim.specs import parse_burst

DEFAULT_INTERVALS = SWEEP_INTERVALS
DEFAULT_CACHES = SWEEP_CACHES
DEFAULT_NODES = SWEEP_NODES


def scaled(base: SimConfig, nodes: int) -> SimConfig:
    """``base`` resized to ``nodes`` with the same per-node workload."""
    factor = nodes / base.nodes
    burst = base.burst
    if burst is not None:
        parsed = parse_burst(burst)
        burst = f"{max(1, round(parsed.size * factor))}/{parsed.period:g}s"
    rate = base.rate * factor if base.rate is not None else None
    return replace(base, nodes=nodes, pods=max(1, round(base.pods * factor)), burst=burst, rate=rate)


@dataclass(frozen=True)
class SweepRun:
    nodes: int
    cache: str
    interval: float
    result: SimResult

    def row(self) -> dict[str, Any]:
        c = self.result.counters
        p = self.result.pending_summary()
        return {
            "nodes": self.nodes,
            "pods": self.result.config["pods"],
            "cache": self.cache,
            "agent_interval": self.interval,
            "tae": c.topology_affinity_errors,
            "pods_with_tae": c.pods_with_tae,
            "pending_p50": p["p50"],
            "pending_p99": p["p99"],
            "pending_max": p["max"],
            "still_pending": self.result.still_pending,
            "unschedulable_attempts": c.unschedulable_attempts,
            "unschedulable_with_room": c.unschedulable_with_room,
            "nrt_writes": c.nrt_writes,
            "flushes": c.flushes,
            "fingerprint_mismatches": c.fingerprint_mismatches,
            "fingerprint_disagreements": c.fingerprint_disagreements,
            "wall_seconds": round(self.result.wall_seconds, 2),
        }


def sweep(
    base: SimConfig,
    *,
    intervals: Sequence[float] = DEFAULT_INTERVALS,
    caches: Sequence[str] = DEFAULT_CACHES,
    nodes: Sequence[int] = DEFAULT_NODES,
    progress: Callable[[SweepRun], None] | None = None,
) -> list[SweepRun]:
    """Run every combination (nodes outermost, then interval, then cache)."""
    runs = []
    for size in nodes:
        sized = scaled(base, size)
        for interval in intervals:
            for cache in caches:
                result = run_simulation(replace(sized, agent_interval=interval, cache=cache))
                done = SweepRun(size, cache, interval, result)
                runs.append(done)
                if progress is not None:
                    progress(done)
    return runs


def format_seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def sweep_table(runs: Sequence[SweepRun]) -> str:
    header = (
        "nodes",
        "pods",
        "agent",
        "cache",
        "TAE",
        "pods w/ TAE",
        "p50 s",
        "p99 s",
        "max s",
        "still pending",
        "unsched. (room)",
        "NRT writes",
        "flushes",
        "disagree",
    )
    rows = [header]
    for r in runs:
        d = r.row()
        rows.append(
            (
                str(d["nodes"]),
                str(d["pods"]),
                f"{d['agent_interval']:g}s",
                d["cache"],
                str(d["tae"]),
                str(d["pods_with_tae"]),
                format_seconds(d["pending_p50"]),
                format_seconds(d["pending_p99"]),
                format_seconds(d["pending_max"]),
                str(d["still_pending"]),
                f"{d['unschedulable_attempts']} ({d['unschedulable_with_room']})",
                str(d["nrt_writes"]),
                str(d["flushes"]),
                str(d["fingerprint_disagreements"]),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
