"""The extender's memory stays bounded under distinct hostile candidate lists (issue #26, item 1).

A real ``rte extender`` process is sent distinct ``NodeNames`` lists of made-up names, each
seen once (no memo ever hits), and its resident memory read from ``/proc``. Before the bound,
every list stayed in the memos of candidate lists (counted, not weighed) and every unknown name
kept a row of the decision table for good: at this scale RSS grew by some 50 MiB a list, with no
plateau. ``bench/bench_extender_memory.py`` measures the full scale (1M-name lists, 32 MiB
bodies); ``docs/extender-reliability.md`` gives its figures.
"""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from http import HTTPStatus
from pathlib import Path

import pytest
import yaml

from rte.extender.server import LargeRequests
from rte.runtime.httpwire import JSON, Response
from tests.helpers.paths import REPO

MiB = 1 << 20

LISTS = 8
NAMES = 50_000
"""Distinct lists of this many names: ~2.2 MB bodies, each under the per-list budget, so the
memos keep some of them and must evict by bytes."""
GROWTH_BOUND = 160 * MiB
"""What the lists may leave resident together: the memos' byte budgets (a few of 32 MiB, mostly
sharing one copy of each list) plus the allocator's slack. Before the bound they left 400 MiB."""


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(conn: http.client.HTTPConnection, verb: str, args: object) -> bytes:
    conn.request("POST", f"/{verb}", body=json.dumps(args).encode())
    response = conn.getresponse()
    data = response.read()
    assert response.status == 200, data[:300]
    return data


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads RSS from /proc")
def test_distinct_lists_of_unknown_names_leave_memory_bounded() -> None:
    port = _free_port()
    nrts = str(REPO / "examples" / "nrt-two-nodes.yaml")
    argv = [sys.executable, "-m", "rte", "extender", "--listen", f"127.0.0.1:{port}", "--nrt-file", nrts]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                conn.request("GET", "/readyz")
                if conn.getresponse().read() and conn.sock is not None:
                    break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()  # type: ignore[union-attr]
            time.sleep(0.05)
        pod = yaml.safe_load((REPO / "examples" / "pod-guaranteed.yaml").read_text())
        known = ["worker-a", "worker-b"]
        for _ in range(3):
            _post(conn, "filter", {"Pod": pod, "NodeNames": known})
            _post(conn, "prioritize", {"Pod": pod, "NodeNames": known})
        before = _rss(proc.pid)
        for k in range(LISTS):
            names = [f"ghost-{k}-{i:07d}.pool-a.example.internal" for i in range(NAMES)]
            verb = "prioritize" if k % 4 == 3 else "filter"
            _post(conn, verb, {"Pod": pod, "NodeNames": [*known, *names]})
        growth = _rss(proc.pid) - before
        # The known nodes are still decided as before.
        answer = json.loads(_post(conn, "filter", {"Pod": pod, "NodeNames": known}))
        assert answer["NodeNames"] == ["worker-b"]
        conn.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert growth < GROWTH_BOUND, f"RSS grew by {growth / MiB:.0f} MiB under {LISTS} distinct lists"


def test_large_requests_are_served_one_at_a_time_and_small_ones_never_wait() -> None:
    """What several large requests at once cost is one request's worth: the second waits for
    the first, and is told to retry (503) when its turn does not come in time."""
    large = LargeRequests(threshold=100, wait=0.2)
    inside = threading.Event()
    leave = threading.Event()

    def first() -> Response:
        inside.set()
        leave.wait(10)
        return Response(HTTPStatus.OK, b"first", JSON)

    worker = threading.Thread(target=lambda: large.serve(100, first))
    worker.start()
    try:
        assert inside.wait(10)
        small = large.serve(99, lambda: Response(HTTPStatus.OK, b"small", JSON))
        assert small.body == b"small"
        refused = large.serve(5000, lambda: Response(HTTPStatus.OK, b"second", JSON))
        assert refused.status == HTTPStatus.SERVICE_UNAVAILABLE
        assert b"another large request" in refused.body
    finally:
        leave.set()
        worker.join(10)
    assert large.serve(5000, lambda: Response(HTTPStatus.OK, b"second", JSON)).body == b"second"
