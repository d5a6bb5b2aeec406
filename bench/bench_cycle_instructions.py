"""Instructions per agent cycle, counted by callgrind: a figure the machine's load cannot move.

The cycle of ``bench_cycle`` (one pod changed, 8 zones, 384 CPUs, 64 devices), with a client
double answering prepared bytes instead of gRPC. This module runs itself under
``valgrind --tool=callgrind`` twice, with 0 and with N cycles after the same start, and prints
the difference per cycle, for the scanner with its pod tally and for the same scanner
accounting every pod again (the baseline). Needs valgrind; takes minutes (valgrind runs Python
about 50 times slower).

    python -m bench.bench_cycle_instructions [--pods 250] [--cycles 20]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def _cycles(pods: int, tally: bool, cycles: int) -> None:
    """What runs under valgrind: the start, four cycles to warm up, then ``cycles`` cycles."""
    from bench.bench_cycle import _Answers, _Config
    from rte.agent.compute.reading import PublishingRules
    from rte.agent.scanner import Scanner
    from rte.host.sysfs import read_machine
    from rte.model.vocabulary import FingerprintMethod, InformerMode
    from rte.podres.reader import SocketReader
    from rte.testing import fake_sysfs, scenarios

    scenario = scenarios.synthetic(numa_ids=scenarios.LARGE_NODE_NUMA_IDS, cpus=384, pods=pods, devices=64)
    with tempfile.TemporaryDirectory(prefix="rte-bench-") as tmp:
        machine = read_machine(fake_sysfs.write_sysfs(Path(tmp) / "sys", scenario), pci=False)
    scanner = Scanner(
        node_name="large",
        reader=SocketReader(_Answers(scenario)),  # type: ignore[arg-type]
        machine_loader=lambda: machine,
        kubelet_config=_Config(),
        rules=PublishingRules(FingerprintMethod.WITH_EXCLUSIVE_RESOURCES, InformerMode.DEDICATED),
        pod_tally=tally,
    )
    for _ in range(4 + cycles):
        scanner.scan(fresh_list=True)


def _instructions(pods: int, tally: bool, cycles: int) -> int:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("bench: valgrind is not installed (apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="rte-bench-") as tmp:
        argv = [
            valgrind, "--tool=callgrind", f"--callgrind-out-file={tmp}/out",
            sys.executable, "-m", "bench.bench_cycle_instructions",
            "--inner", "tally" if tally else "full", "--pods", str(pods), "--cycles", str(cycles),
        ]  # fmt: skip
        # The same hash seed in every run: set and dict layouts, hence instructions, repeat.
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"bench: no instruction count in valgrind's output: {done.stderr[-500:]}")
    return int(found.group(1))


def per_cycle(pods: int, tally: bool, cycles: int) -> float:
    """Millions of instructions per cycle."""
    return (_instructions(pods, tally, cycles) - _instructions(pods, tally, 0)) / cycles / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=250)
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--inner", choices=("tally", "full"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        _cycles(args.pods, args.inner == "tally", args.cycles)
        return
    tally = per_cycle(args.pods, True, args.cycles)
    full = per_cycle(args.pods, False, args.cycles)
    print(f"agent cycle, {args.pods} pods, one pod changed, no gRPC, callgrind:")
    print(f"  {tally:.2f} M instructions with the pod tally; every pod accounted again: {full:.2f} M")


if __name__ == "__main__":
    main()
