"""The extender's memory under hostile candidate lists (issue #26, item 1).

A client that may call the extender (kube-scheduler, or anything holding a client certificate)
sends, under the 64 MiB body limit, ``NodeNames`` lists of names no node has: each list is
distinct, so no memo ever hits. Before the bound, every such list stayed in the memos of
candidate lists and every unknown name kept a row of the decision table: RSS grew by about 50
times each body and was never given back, and a few requests OOM-killed a 1 GiB replica.

The real extender runs as a child process (``rte extender --nrt-file``, 5000 NRTs of 8 zones,
as :mod:`bench.bench_serve`), its RSS and peak RSS read from ``/proc/<pid>/status`` (``VmRSS``,
``VmHWM``) after each step:

1. realistic traffic: round trips on the 5000 known names (the baseline);
2. twelve distinct filter requests of 100 000 made-up names (1.2 MB each);
3. three distinct filter requests of 1 000 000 names (12.9 MB each);
4. four distinct prioritize requests of 1 000 000 names;
5. one filter request of ~62 MiB (1.4 M names), just under the body limit;
6. four prioritize requests of 1 000 000 names at once, on four connections;
7. realistic traffic again (what stays).

Run: ``python -m bench.bench_extender_memory`` (``--extender-src DIR``: another checkout's
extender, e.g. main's, for the figures before; ``--quick``: steps 1, 2 and 7 only).
"""

from __future__ import annotations

import argparse
import http.client
import json
import tempfile
import threading
import time
from pathlib import Path

import bench.bench_serve_start as serve_start
from bench.bench_extender import POD
from bench.bench_serve_start import Extender, write_nrt_file

NODES = 5000
MiB = 1 << 20


def status(pid: int) -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` (peak RSS) of a process, in bytes."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


def made_up(count: int, tag: str) -> list[str]:
    """``count`` distinct names no node has (DNS-like, as a real list would be)."""
    return [f"ghost-{tag}-{i:07d}.pool-a.example.internal" for i in range(count)]


def send(extender: Extender, verb: str, names: list[str]) -> int:
    """POST one request of ``names``; the body's size."""
    body = json.dumps({"Pod": POD, "NodeNames": names}).encode()
    extender.conn.request("POST", f"/{verb}", body=body)
    response = extender.conn.getresponse()
    data = response.read()
    assert response.status == 200, data[:300]
    return len(body)


def at_once(port: int, verb: str, lists: list[list[str]]) -> list[int]:
    """One request per list, each on its own connection, all at once; the sizes of those
    answered 200 (the others were told to retry: only one large request is served at a time)."""
    bodies = [json.dumps({"Pod": POD, "NodeNames": names}).encode() for names in lists]
    sizes: list[int] = []

    def one(body: bytes) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.request("POST", f"/{verb}", body=body)
        response = conn.getresponse()
        response.read()
        if response.status == 200:
            sizes.append(len(body))
        conn.close()

    threads = [threading.Thread(target=one, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sizes


def run(quick: bool = False) -> list[tuple[str, int, int]]:
    """Each step's (label, RSS, peak RSS) after it."""
    steps: list[tuple[str, int, int]] = []
    with tempfile.TemporaryDirectory() as tmp:
        nrt_file = Path(tmp) / "nrts.json"
        write_nrt_file(nrt_file, NODES)
        extender = Extender(nrt_file)
        try:
            pid = extender.proc.pid
            known = [f"worker-{i:05d}" for i in range(NODES)]

            def note(label: str) -> None:
                s = status(pid)
                steps.append((label, s["VmRSS"], s["VmHWM"]))
                rss, peak = s["VmRSS"] / MiB, s["VmHWM"] / MiB
                print(f"{label:<52} RSS {rss:7.0f} MiB   peak {peak:7.0f} MiB", flush=True)

            for _ in range(20):
                extender.round_trip(known)
            note("ready, 20 round trips on 5000 known names")
            for k in range(12):
                size = send(extender, "filter", made_up(100_000, f"a{k}"))
                note(f"filter, distinct 100k names #{k + 1} ({size / MiB:.1f} MiB)")
            if not quick:
                for k in range(3):
                    size = send(extender, "filter", made_up(1_000_000, f"b{k}"))
                    note(f"filter, distinct 1M names #{k + 1} ({size / MiB:.1f} MiB)")
                for k in range(4):
                    size = send(extender, "prioritize", made_up(1_000_000, f"c{k}"))
                    note(f"prioritize, distinct 1M names #{k + 1} ({size / MiB:.1f} MiB)")
                size = send(extender, "filter", made_up(1_400_000, "d"))
                note(f"filter, 1.4M names ({size / MiB:.1f} MiB)")
                sizes = at_once(extender.port, "prioritize", [made_up(1_000_000, f"e{k}") for k in range(4)])
                note(f"4 prioritize of 1M names at once ({sum(sizes) / MiB:.0f} MiB, {len(sizes)} answered)")
            start = time.perf_counter()
            for _ in range(20):
                extender.round_trip(known)
            note(f"20 round trips on known names ({(time.perf_counter() - start) / 20 * 1e3:.0f} ms each)")
        finally:
            extender.stop()
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extender-src", default="", help="run the extender of another checkout")
    parser.add_argument("--quick", action="store_true", help="the 100k-name steps only")
    options = parser.parse_args()
    serve_start.EXTENDER_SRC = options.extender_src
    run(options.quick)


if __name__ == "__main__":
    main()
