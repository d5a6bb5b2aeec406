"""Small timing helpers shared by the benchmarks: medians of repeated runs, never single shots."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass


def median_seconds(func: Callable[[], object], *, repeat: int = 7, number: int = 1) -> float:
    """Median wall time of ``number`` calls, over ``repeat`` runs, per call."""
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            func()
        runs.append((time.perf_counter() - start) / number)
    return statistics.median(runs)


def interleaved_medians(
    first: Callable[[], object], second: Callable[[], object], *, repeat: int = 201, warmup: int = 20
) -> tuple[float, float]:
    """Median wall time of one call of each, the calls alternating (``first`` then ``second``,
    each run's order swapped with the next) after ``warmup`` untimed pairs, so that a burst of
    load elsewhere on the machine, or a cache the other left warm, falls on both alike."""
    for _ in range(warmup):
        first()
        second()
    runs: tuple[list[float], list[float]] = ([], [])
    pair = ((0, first), (1, second))
    for k in range(repeat):
        for which, func in pair if k % 2 == 0 else pair[::-1]:
            start = time.perf_counter()
            func()
            runs[which].append(time.perf_counter() - start)
    return statistics.median(runs[0]), statistics.median(runs[1])


def median_command_seconds(argv: Sequence[str], *, repeat: int = 9) -> float:
    """Median wall time of a whole command (interpreter start included)."""
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def python() -> str:
    return sys.executable


@dataclass(frozen=True)
class Row:
    """One line of the summary table printed by ``python -m bench.run_all``."""

    what: str
    figure: str
    target: str
    met: bool | None  # None: informational, no target


def print_rows(rows: Sequence[Row]) -> None:
    """A bench's rows, one line each, as its ``main`` prints them when run alone."""
    for row in rows:
        met = "" if row.met is None else ("  ok" if row.met else "  OVER")
        print(f"{row.what}: {row.figure}  target {row.target}{met}")
