"""How much a List answer far above the agent's pod cap costs the agent (issue #26 item 4).

Builds a List response of ``--pods`` one-container pods (400 000 by default: 9.9 MiB, under the
16 MiB gRPC cap) and hands it, as the bytes a kubelet would send, to the agent's socket reader
with a cap of ``--cap`` pods (440: 4 x the kubelet's default maxPods). Prints the time of the
whole refusal, of its two parts (the digest of the received bytes; counting the records up to
one past the cap) and the memory allocated while refusing (tracemalloc, besides the received
buffer itself).

    python -m bench.bench_list_cap [--pods 400000] [--cap 440] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import time
import tracemalloc

from rte.errors import InputError
from rte.podres.client import PodResourcesClient
from rte.podres.reader import SocketReader
from rte.podres.v1 import api_pb2
from rte.podres.wire import count_records
from rte.testing import scenarios as sc


class _Answer:
    """The client surface the socket reader uses, answering List with fixed bytes."""

    endpoint = "bench"
    decode = PodResourcesClient.decode

    def __init__(self, wire: bytes) -> None:
        self.wire = wire

    def list_wire(self) -> bytes:
        return self.wire


def flood(pods: int) -> bytes:
    response = api_pb2.ListPodResourcesResponse()
    for i in range(pods):
        response.pod_resources.append(sc.pod("flood", f"pod-{i:06d}", sc.container("c")))
    return response.SerializeToString()


def refuse(wire: bytes, cap: int) -> None:
    reader = SocketReader(_Answer(wire), pod_limit=cap)  # type: ignore[arg-type]
    try:
        reader.list()
    except InputError:
        return
    raise SystemExit(f"a List of more than {cap} pods was not refused")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=400_000)
    parser.add_argument("--cap", type=int, default=440)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    wire = flood(args.pods)
    print(f"{args.pods} pods, {len(wire) / 2**20:.1f} MiB on the wire, cap {args.cap}")
    tracemalloc.start()
    refuse(wire, args.cap)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"allocated while refusing: {peak / 1024:.0f} KiB peak")
    for _ in range(args.rounds):
        start = time.perf_counter()
        refuse(wire, args.cap)
        refused = time.perf_counter()
        hashlib.blake2b(wire, digest_size=16).digest()
        digested = time.perf_counter()
        count_records(wire, args.cap)
        counted = time.perf_counter()
        print(
            f"refused in {1000 * (refused - start):.1f} ms"
            f" (digest {1000 * (digested - refused):.1f} ms, count {1000 * (counted - digested):.2f} ms)"
        )


if __name__ == "__main__":
    main()
