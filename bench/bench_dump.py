"""`rte dump` wall time on the largest fixture, interpreter start included (target <= 300 ms).

Baseline, run in the same process: the bare interpreter (`python -c pass`), so the ratio says
how much `rte dump` adds on top of starting Python on this machine right now.
"""

from __future__ import annotations

from pathlib import Path

from bench.timing import Row, median_command_seconds, python

ROOT = Path(__file__).resolve().parent.parent
LARGEST = ROOT / "tests" / "fixtures" / "sysfs" / "dell-r640-2s-xeon6230r-2numa-sriov-vfs" / "sys"


def run() -> dict[str, float]:
    argv = [
        python(),
        "-m",
        "rte",
        "dump",
        "--sysfs",
        str(LARGEST),
        "--no-kubelet",
        "-o",
        "json",
    ]
    dump = median_command_seconds(argv)
    bare = median_command_seconds([python(), "-c", "pass"])
    return {"dump_ms": dump * 1000, "interpreter_ms": bare * 1000, "ratio_to_interpreter": dump / bare}


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
            f"{r['dump_ms']:.0f} ms (bare interpreter {r['interpreter_ms']:.0f} ms)",
            "<= 300 ms",
            r["dump_ms"] <= 300,
        )
    ]
    rows += [Row(f"import time, {label}", f"{ms:.0f} ms", "-", None) for label, ms in import_times().items()]
    return rows


def main() -> None:
    r = run()
    print(f"rte dump (largest fixture): {r['dump_ms']:.0f} ms median (target <= 300 ms)")
    print(f"  bare interpreter {r['interpreter_ms']:.0f} ms; ratio {r['ratio_to_interpreter']:.1f}x")


if __name__ == "__main__":
    main()
