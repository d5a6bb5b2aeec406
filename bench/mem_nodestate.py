"""Memory of the reserve cache's per-node state at 20 000 nodes (issue #13).

Builds the node states the cache makes for nodes with an NRT and no pods (``NodeState`` with its
own ``PodLog``, as :mod:`rte.consumer.cache.overreserve` does) and reports what they hold:
tracemalloc's growth across the construction, and the sum of ``sys.getsizeof`` over each state,
its log and the containers they hold. Run it on two checkouts to compare them:
``PYTHONPATH=<checkout> python bench/mem_nodestate.py``.
"""

from __future__ import annotations

import argparse
import sys
import tracemalloc

from rte.consumer.cache.nodestate import NodeState
from rte.consumer.cache.overreserve import OverReserveCache
from rte.consumer.cache.podlog import DEFAULT_LIMIT, PodLog
from rte.consumer.store import NRTStore
from rte.model.topology import NodeTopology, ResourceInfo, Zone

CONTAINERS = ("reservations", "live", "holds", "credits")


def shallow(objects: list[object]) -> int:
    """Bytes of these objects, each counted once (shared empties are counted a single time)."""
    seen: dict[int, int] = {id(o): sys.getsizeof(o) for o in objects}
    return sum(seen.values())


def through_cache(nodes: int) -> int:
    """tracemalloc's growth while the cache looks every node up once (each gets its state, adopts
    its NRT and builds its view), NRTs of one hardware model, no pods."""
    gib = 2**30
    resources = (ResourceInfo("cpu", 32, 32, 32), ResourceInfo("memory", 128 * gib, 128 * gib, 128 * gib))
    zones = tuple(Zone(f"node-{z}", resources=resources) for z in range(2))
    store = NRTStore()
    store.replace_all([NodeTopology(name=f"n{i}", zones=zones) for i in range(nodes)])
    cache = OverReserveCache(store)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(nodes):
        cache.get(f"n{i}")
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return grown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=20_000)
    args = parser.parse_args()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    states = [NodeState(log=PodLog(DEFAULT_LIMIT)) for _ in range(args.nodes)]
    traced = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    parts: list[object] = []
    for st in states:
        parts += [st, st.log, st.log.members, st.log.changes, *(getattr(st, c) for c in CONTAINERS)]
    total = shallow(parts)
    mib = 1024 * 1024
    print(f"nodes={args.nodes} tracemalloc={traced / mib:.2f} MiB getsizeof={total / mib:.2f} MiB")
    print(f"per node: tracemalloc={traced / args.nodes:.0f} B getsizeof={total / args.nodes:.0f} B")
    grown = through_cache(args.nodes)
    print(f"through the cache: tracemalloc={grown / mib:.2f} MiB, {grown / args.nodes:.0f} B/node")


if __name__ == "__main__":
    main()
