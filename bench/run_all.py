"""Run every benchmark and print one table with the targets beside the figures.

    python -m bench.run_all            # everything (about 25 minutes on a 2-core machine)
    python -m bench.run_all --quick    # skip the slow ones (processes: agent, extender; simulation)

Each benchmark module also runs on its own (``python -m bench.bench_<name>``) with more detail.
Figures are medians of repeated runs on whatever machine this is; compare ratios, not absolutes,
across machines.
"""

from __future__ import annotations

import argparse
import importlib
import time

from bench.timing import Row

FAST = (
    "bench_fingerprint",
    "bench_dump",
    "bench_cycle",
    "bench_consumer",
    "bench_cache",
    "bench_resync",
    "bench_extender",
)
SLOW = (
    "bench_agent",
    "bench_simulate",
    "bench_serve",
    "bench_serve_start",
    "bench_cluster_scale",
    "bench_simulate:big_summary",  # issue #27's 5000 x 100,000 simulation, about 5 minutes
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the agent process and the big simulation")
    args = parser.parse_args()
    rows: list[Row] = []
    for name in FAST + (() if args.quick else SLOW):
        start = time.monotonic()
        print(f"running {name} ...", flush=True)
        module, _, function = name.partition(":")
        rows += getattr(importlib.import_module(f"bench.{module}"), function or "summary")()
        print(f"  done in {time.monotonic() - start:.0f} s", flush=True)
    width = max(len(r.what) for r in rows)
    fig = max(len(r.figure) for r in rows)
    tgt = max(len(r.target) for r in rows)
    print()
    print(f"{'benchmark':<{width}}  {'figure':<{fig}}  {'target':<{tgt}}  met")
    for r in rows:
        met = "-" if r.met is None else ("yes" if r.met else "NO")
        print(f"{r.what:<{width}}  {r.figure:<{fig}}  {r.target:<{tgt}}  {met}")


if __name__ == "__main__":
    main()
