"""`rte dump` wall time on the largest fixture, interpreter start included (target <= 300 ms).

Baseline, run in the same process and interleaved with it (dump, bare, dump, bare...): the bare
interpreter (`python -c pass`), so the ratio says how much `rte dump` adds on top of starting
Python on this machine right now. Each run's CPU time (user + system, from the child's rusage)
is shown too: on a machine shared with other work a short process waits for a core, which wall
time counts and CPU time does not, so the CPU figures are the ones to compare between runs made
under different load. Nearly all of `rte dump` is its imports (``python -X importtime``): about
60 modules of the agent, the model and the host readers, none of them dominant.

    python -m bench.bench_dump [--against DIR] [--repeat 15]

``--against`` runs the same command from another checkout's sources (``PYTHONPATH``) in the
same interleaving: an older commit as a baseline for "is it the code or the machine".

Bytecode: an installed rte has its ``.pyc`` files (pip compiles them when it installs the wheel,
and the image compiles them at build time, see deploy/Containerfile), but a source checkout run
with ``PYTHONDONTWRITEBYTECODE=1`` (as this machine's shell sets it) compiles every rte module on
every start, which is a third of `rte dump`'s CPU. So the measured commands, the bare interpreter
included, run with a bytecode cache of their own (``PYTHONPYCACHEPREFIX``, a temporary
directory the unmeasured warm-up round fills) and writing allowed; the same dump compiled from
source every time (a copy of ``rte/`` without bytecode) is measured alongside, for the record.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench.timing import Row, median_command_seconds, python

ROOT = Path(__file__).resolve().parent.parent
LARGEST = ROOT / "tests" / "fixtures" / "sysfs" / "dell-r640-2s-xeon6230r-2numa-sriov-vfs" / "sys"
DUMP = ["-m", "rte", "dump", "--sysfs", str(LARGEST), "--no-kubelet", "-o", "json"]
"""The fixture is this checkout's, also for ``--against`` (older checkouts may not have it)."""
BARE = ["-c", "pass"]


def _one(argv: Sequence[str], env: Mapping[str, str] | None) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of ``argv``; CPU is the child's user + system time. With
    ``env``'s ``RTE_BENCH_CWD`` (set with ``--against``), the child runs there (``-m`` puts its
    working directory first on the path)."""
    cwd = env.get("RTE_BENCH_CWD") if env is not None else None
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise subprocess.CalledProcessError(child.returncode, argv)
    return wall, usage.ru_utime + usage.ru_stime


def interleaved(
    commands: Mapping[str, tuple[Sequence[str], Mapping[str, str] | None]], repeat: int = 15
) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) seconds of each command, run in turn ``repeat`` times (after one unmeasured
    round that warms the file cache)."""
    for argv, env in commands.values():
        _one(argv, env)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, (argv, env) in commands.items():
            runs[name].append(_one(argv, env))
    return {
        name: (statistics.median(w for w, _ in seen), statistics.median(c for _, c in seen))
        for name, seen in runs.items()
    }


def cached_bytecode_env(cache: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with bytecode written to and read from
    ``cache``, as an installed package's ``.pyc`` files are read."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def run(repeat: int = 15, against: Path | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="rte-bench-pyc-") as cache:
        cached = cached_bytecode_env(Path(cache))
        # A copy of the package without its __pycache__ directories (a test run without
        # PYTHONDONTWRITEBYTECODE may have left some in this checkout), never written to.
        src = str(Path(cache) / "src")
        shutil.copytree(ROOT / "rte", Path(src) / "rte", ignore=shutil.ignore_patterns("__pycache__"))
        from_source = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": src, "RTE_BENCH_CWD": src}
        commands: dict[str, tuple[Sequence[str], Mapping[str, str] | None]] = {
            "dump": ([python(), *DUMP], cached),
            "bare": ([python(), *BARE], cached),
            "source": ([python(), *DUMP], from_source),
        }
        if against is not None:
            env = {**cached, "PYTHONPATH": str(against.resolve()), "RTE_BENCH_CWD": str(against.resolve())}
            commands["against"] = ([python(), *DUMP], env)
        got = interleaved(commands, repeat)
    (dump, dump_cpu), (bare, bare_cpu) = got["dump"], got["bare"]
    figures = {
        "dump_ms": dump * 1000,
        "dump_cpu_ms": dump_cpu * 1000,
        "interpreter_ms": bare * 1000,
        "interpreter_cpu_ms": bare_cpu * 1000,
        "ratio_to_interpreter": dump / bare,
        "cpu_ratio_to_interpreter": dump_cpu / bare_cpu,
        "source_ms": got["source"][0] * 1000,
        "source_cpu_ms": got["source"][1] * 1000,
    }
    if against is not None:
        figures["against_ms"], figures["against_cpu_ms"] = (x * 1000 for x in got["against"])
    return figures


def import_times() -> dict[str, float]:
    """Wall time to import what each long-running command loads, interpreter start included."""
    modules = {"agent (rte run)": "rte.commands.run", "extender (rte extender)": "rte.extender.app"}
    return {
        label: median_command_seconds([python(), "-c", f"import {module}"]) * 1000
        for label, module in modules.items()
    }


def summary() -> list[Row]:
    r = run()
    rows = [
        Row(
            "rte dump, largest fixture, interpreter start included",
            f"{r['dump_ms']:.0f} ms, CPU {r['dump_cpu_ms']:.0f} ms "
            f"(bare interpreter {r['interpreter_ms']:.0f} ms, CPU {r['interpreter_cpu_ms']:.0f} ms)",
            "<= 300 ms",
            r["dump_ms"] <= 300,
        ),
        Row(
            "rte dump against a bare interpreter start, same run",
            f"{r['ratio_to_interpreter']:.1f}x wall, {r['cpu_ratio_to_interpreter']:.1f}x CPU "
            f"(compiled from source every run: {r['source_ms']:.0f} ms, CPU {r['source_cpu_ms']:.0f} ms)",
            "<= 5x",
            r["ratio_to_interpreter"] <= 5,
        ),
    ]
    rows += [Row(f"import time, {label}", f"{ms:.0f} ms", "-", None) for label, ms in import_times().items()]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, help="another checkout's root, run in the same interleaving")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    r = run(args.repeat, args.against)
    print(
        f"rte dump (largest fixture), load average {load:.1f}: {r['dump_ms']:.0f} ms median "
        f"(target <= 300 ms), CPU {r['dump_cpu_ms']:.0f} ms"
    )
    print(
        f"  bare interpreter {r['interpreter_ms']:.0f} ms, CPU {r['interpreter_cpu_ms']:.0f} ms; "
        f"ratio {r['ratio_to_interpreter']:.1f}x wall, {r['cpu_ratio_to_interpreter']:.1f}x CPU "
        "(target <= 5x)"
    )
    print(f"  compiled from source every run: {r['source_ms']:.0f} ms, CPU {r['source_cpu_ms']:.0f} ms")
    if args.against is not None:
        print(f"  {args.against}: {r['against_ms']:.0f} ms, CPU {r['against_cpu_ms']:.0f} ms")


if __name__ == "__main__":
    main()
