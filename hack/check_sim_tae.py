"""Check the simulator's "done when" for TopologyAffinityErrors and print a pass/fail table.

At the issue's load (100 nodes, 3000 pods, bursts of 100 every 60 s, load 0.9, the agent writing
every 30 s), for both policies and both scopes: with the reserve cache there must be no
TopologyAffinityError at all, and without a cache there must be some (otherwise the load proves
nothing). Each check runs over several seeds with the default pod mix, and once with a mix of init
containers, sidecars, fractional and Burstable pods (plus, for ``restricted``, pods wider than a
zone) on SMT nodes.

Usage: ``python hack/check_sim_tae.py [--seeds 1,2,3] [--nodes 100] [--pods 3000] [--shape S]
[--quick]`` (``--shape 24x8c-768Gi``: every check on nodes of 24 NUMA zones; ``--quick``: 4 nodes,
400 pods, seed 1 and the default mix only, 8 runs, where four nodes under bursts of 100 pods
contend enough for the no-cache runs to see TAEs). Exits 1 when a check fails. A run takes
seconds to a minute at 2 zones, minutes at 24; the whole table a few minutes to an hour.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

from rte.sim.config import SimConfig
from rte.sim.engine import run_simulation

RICH_MIX = (
    "30%:2c-4Gi,15%:4c-8Gi+init2c,15%:2c-4Gi+sidecar1c,10%:1.5c-2Gi,10%:2c-4Gi+burstable,"
    "10%:8c-16Gi+init4c+sidecar2c,10%:4c-8Gi"
)
WIDE_MIX = RICH_MIX.replace("10%:4c-8Gi", "10%:40c-120Gi")  # wider than a zone in CPUs and memory
RICH_SHAPES = "2x32c2t-192Gi"
QUICK_NODES = 4
QUICK_PODS = 400


@dataclass(frozen=True)
class Check:
    policy: str
    scope: str
    mix: str
    seed: int
    cache: str

    @property
    def mix_name(self) -> str:
        return "default" if not self.mix else ("wide+init" if self.mix == WIDE_MIX else "init/sidecar")


def checks(seeds: list[int], rich_mixes: bool = True) -> list[Check]:
    out = []
    for policy in ("restricted", "single-numa-node"):
        for scope in ("container", "pod"):
            for cache in ("reserve", "none"):
                out.extend(Check(policy, scope, "", seed, cache) for seed in seeds)
                if rich_mixes:
                    rich = WIDE_MIX if policy == "restricted" else RICH_MIX
                    out.append(Check(policy, scope, rich, seeds[0], cache))
    return out


def run(check: Check, nodes: int, pods: int, shape: str | None = None) -> tuple[int, int, int, float]:
    """One simulation; ``shape`` replaces every check's node shapes (e.g. a many-NUMA one)."""
    shapes = {"shapes": RICH_SHAPES} if check.mix else {}
    if shape:
        shapes = {"shapes": shape}
    config = SimConfig(
        nodes=nodes,
        pods=pods,
        burst="100/60s",
        load=0.9,
        agent_interval=30.0,
        policy=check.policy,
        scope=check.scope,
        cache=check.cache,
        seed=check.seed,
        **({"pod_mix": check.mix} if check.mix else {}),
        **shapes,
    )
    start = time.perf_counter()
    result = run_simulation(config)
    c = result.counters
    return c.topology_affinity_errors, c.pods_scheduled, result.still_pending, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default=None, help="comma-separated seeds (default 1,2,3; --quick: 1)")
    parser.add_argument("--nodes", type=int, default=None, help="default 100 (--quick: 4)")
    parser.add_argument("--pods", type=int, default=None, help="default 3000 (--quick: 400)")
    parser.add_argument(
        "--shape", default=None, help="node shapes for every check, e.g. '24x8c-768Gi' (many NUMA zones)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="4 nodes, 400 pods, seed 1, the default mix only (8 runs): on a small cluster the bursts "
        "contend, so the no-cache runs see TAEs",
    )
    args = parser.parse_args(argv)
    nodes = args.nodes if args.nodes is not None else (QUICK_NODES if args.quick else 100)
    pods = args.pods if args.pods is not None else (QUICK_PODS if args.quick else 3000)
    args.seeds = args.seeds or ("1" if args.quick else "1,2,3")
    seeds = [int(s) for s in args.seeds.split(",")]
    header = f"{'policy':<17}{'scope':<10}{'mix':<13}{'seed':>5} {'cache':<8}{'TAE':>6}{'ran':>6}"
    print(header + f"{'pending':>8}{'secs':>7}  verdict")
    failed = 0
    for check in checks(seeds, rich_mixes=not args.quick):
        tae, ran, pending, secs = run(check, nodes, pods, args.shape)
        ok = tae == 0 if check.cache == "reserve" else tae > 0
        failed += not ok
        want = "0 TAE" if check.cache == "reserve" else "TAE > 0"
        print(
            f"{check.policy:<17}{check.scope:<10}{check.mix_name:<13}{check.seed:>5} {check.cache:<8}"
            f"{tae:>6}{ran:>6}{pending:>8}{secs:>7.1f}  {'pass' if ok else 'FAIL'} ({want})",
            flush=True,
        )
    print(f"{failed} check(s) failed" if failed else "every check passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
