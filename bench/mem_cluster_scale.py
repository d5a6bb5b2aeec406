"""Where the extender's memory goes once ready in a large cluster (issue #27), by allocating line.

The cluster of :mod:`bench.bench_cluster_scale` (N NRTs and N agent pods in the apiserver double,
in this process); the extender runs as ``rte extender --kubeconfig`` in a child process under
``tracemalloc`` (started before anything is imported), which takes a snapshot once the extender
is ready and exits. Prints the child's traced total and RSS (tracemalloc's own bookkeeping
inflates the RSS: take RSS from the bench), then the lines that allocated most of what is alive,
per node; ``--save FILE`` keeps the snapshot for ``tracemalloc.Snapshot.load``.

    python -m bench.mem_cluster_scale [--nodes 20000] [--frames 1] [--top 30] [--save FILE]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

MiB = 2**20


def _child(out: str) -> None:
    """In the child: serve as ``rte extender`` would, snapshot when ready, exit."""
    import psutil

    import rte.extender.app as app

    def run(settings: Any) -> None:
        extender = app.ExtenderApp(settings).start()
        while not extender.service.ready():
            time.sleep(0.05)
        time.sleep(0.5)  # the last of the readiness work (the resync thread's trim) done
        tracemalloc.take_snapshot().dump(out)
        traced = tracemalloc.get_traced_memory()[0]
        rss = psutil.Process().memory_info().rss
        print(f"traced {traced / MiB:.1f} MiB, RSS under tracemalloc {rss / MiB:.0f} MiB", flush=True)
        os._exit(0)  # nothing to stop cleanly: the parent's double goes with the bench

    app.run_extender = run
    from rte.cli import main

    sys.argv = ["rte", "extender", *sys.argv[3:]]
    main()


def report(snapshot: tracemalloc.Snapshot, nodes: int, top: int) -> None:
    stats = snapshot.statistics("lineno")
    total = sum(s.size for s in stats)
    print(f"traced in all: {total / MiB:.1f} MiB, {total / nodes:.0f} bytes a node")
    for stat in stats[:top]:
        frame = stat.traceback[0]
        where = frame.filename.replace(os.getcwd() + os.sep, "")
        size = f"{stat.size / MiB:7.2f} MiB {stat.size / nodes:6.0f} B/node"
        print(f"{size} {stat.count:8d}  {where}:{frame.lineno}")


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        tracemalloc.start(int(os.environ.get("RTE_TRACE_FRAMES", "1")))
        _child(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--frames", type=int, default=1, help="frames kept per allocation")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--save", type=Path, default=None)
    args = parser.parse_args()
    from bench.bench_cluster_scale import fill
    from rte.testing.apiserver import FakeApiServer

    with tempfile.TemporaryDirectory() as tmp, FakeApiServer() as api:
        fill(api, args.nodes)
        kubeconfig = api.write_kubeconfig(Path(tmp) / "kubeconfig")
        out = str(args.save or Path(tmp) / "snapshot")
        # The extender's arguments as bench_cluster_scale's (bench.bench_serve_start.Extender).
        argv = [sys.executable, "-m", "bench.mem_cluster_scale", "--child", out]
        argv += ["--kubeconfig", str(kubeconfig), "--lease-namespace", "rte", "--listen", "127.0.0.1:0"]
        argv += ["--cache-resync-period", "5s", "--log-level", "warning"]
        env = dict(os.environ, RTE_TRACE_FRAMES=str(args.frames))
        subprocess.run(argv, env=env, check=True)
        report(tracemalloc.Snapshot.load(out), args.nodes, args.top)


if __name__ == "__main__":
    main()
