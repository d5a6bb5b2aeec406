"""Does the reserve cache avoid TopologyAffinityErrors without extra waiting? A pass/fail table.

For every policy x agent interval x seed, at the given cluster sizes (the sweep's scaling: pods
and bursts grow with the nodes), it runs ``rte simulate`` with ``--cache reserve`` and with
``--cache oracle`` (a scheduler reading every kubelet, :mod:`rte.sim.oracle`) and checks:

* reserve: 0 TopologyAffinityErrors;
* reserve: pending p99 at most 1.25 x the oracle's + 1 s;
* reserve: "unschedulable while another node had room" at most 2 % of scheduling attempts.

``--with-reference`` adds ``--cache none`` and ``--cache reference-reserve`` rows (no check) for
comparison. Runs go to a process pool (``--jobs``). Exit status 1 when a check fails. Run:
``python -m bench.check_reserve`` (100 nodes, 3 seeds) or e.g.
``python -m bench.check_reserve --nodes 1000 --seeds 2,3 --policies single-numa-node --intervals 30``
(on 2 x 32-CPU nodes, where every pod fits one zone, the policies and the rte agent's intervals
give the same reserve-cache runs).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from typing import Any

from rte.sim.config import SimConfig
from rte.sim.engine import run_simulation
from rte.sim.sweep import scaled

BASE = SimConfig(nodes=100, pods=3000, burst="100/60s", load=0.9)
POLICIES = ("single-numa-node", "restricted")
INTERVALS = (30.0, 60.0)
P99_RATIO = 1.25
P99_SLACK = 1.0
ROOM_SHARE = 0.02


def run(config: SimConfig) -> dict[str, Any]:
    result = run_simulation(config)
    c = result.counters
    p = result.pending_summary()
    return {
        "tae": c.topology_affinity_errors,
        "p50": p["p50"] or 0.0,
        "p99": p["p99"] or 0.0,
        "attempts": c.scheduling_attempts,
        "room": c.unschedulable_with_room,
        "why": dict(c.refused_with_room),
        "writes": c.nrt_writes,
    }


def cases(
    nodes: Sequence[int],
    seeds: Sequence[int],
    caches: Sequence[str],
    policies: Sequence[str] = POLICIES,
    intervals: Sequence[float] = INTERVALS,
) -> list[tuple[tuple[Any, ...], SimConfig]]:
    out = []
    for size in nodes:
        sized = scaled(BASE, size)
        for policy in policies:
            for interval in intervals:
                for seed in seeds:
                    for cache in caches:
                        config = replace(
                            sized, policy=policy, agent_interval=interval, seed=seed, cache=cache
                        )
                        out.append(((size, policy, interval, seed, cache), config))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[100])
    parser.add_argument("--seeds", default="3", help="a count (seeds 1..N) or a comma-separated list")
    parser.add_argument("--policies", default=",".join(POLICIES), help="comma-separated")
    parser.add_argument(
        "--intervals", default=",".join(f"{i:g}" for i in INTERVALS), help="seconds, comma-separated"
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--with-reference", action="store_true")
    args = parser.parse_args(argv)
    caches = ["reserve", "oracle"] + (["none", "reference-reserve"] if args.with_reference else [])
    seeds = (
        [int(s) for s in args.seeds.split(",")] if "," in args.seeds else list(range(1, int(args.seeds) + 1))
    )
    policies = args.policies.split(",")
    intervals = [float(i) for i in args.intervals.split(",")]
    todo = cases(args.nodes, seeds, caches, policies, intervals)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = dict(zip((key for key, _ in todo), pool.map(run, [c for _, c in todo]), strict=True))
    header = f"{'nodes':>5} {'policy':<16} {'agent':>5} {'seed':>4} {'cache':<17} {'TAE':>4} {'p50 s':>6}"
    header += f" {'p99 s':>6} {'room':>10} {'verdict':<28} why refused with room"
    print(header)
    failed = 0
    for key, outcome in results.items():
        size, policy, interval, seed, cache = key
        verdict = ""
        if cache == "reserve":
            oracle = results[(size, policy, interval, seed, "oracle")]
            problems = []
            if outcome["tae"]:
                problems.append("TAE")
            if outcome["p99"] > P99_RATIO * oracle["p99"] + P99_SLACK:
                problems.append(f"p99>{P99_RATIO * oracle['p99'] + P99_SLACK:.2f}")
            if outcome["room"] > ROOM_SHARE * outcome["attempts"]:
                problems.append("room>2%")
            verdict = "FAIL " + ",".join(problems) if problems else "pass"
            failed += bool(problems)
        room = f"{outcome['room']}/{outcome['attempts']}"
        why = ", ".join(f"{k} {v}" for k, v in sorted(outcome["why"].items()))
        print(
            f"{size:>5} {policy:<16} {interval:>4g}s {seed:>4} {cache:<17} {outcome['tae']:>4}"
            f" {outcome['p50']:>6.2f} {outcome['p99']:>6.2f} {room:>10} {verdict:<28} {why}"
        )
    checked = sum(1 for key in results if key[4] == "reserve")
    print(f"{checked - failed} of {checked} reserve runs pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
