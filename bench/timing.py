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
