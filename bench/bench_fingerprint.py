"""Fingerprint throughput: pods signed per second, in sets of 300 pods (target >= 1,000,000/s).

Baseline, run in the same process: a straightforward implementation (hash both strings for
every pod, pack each hash separately), so the ratio shows what the namespace cache and the
single pack buy, independent of how busy the machine is.
"""

from __future__ import annotations

import random
import struct

import xxhash

from bench.timing import Row, median_seconds
from rte.model import fingerprint as fp

SET_SIZE = 300
SETS = 200


def _pod_sets(seed: int = 1) -> list[list[tuple[str, str]]]:
    rng = random.Random(seed)
    namespaces = [f"tenant-{i}" for i in range(40)] + ["kube-system", "default", "openshift-monitoring"]
    return [
        [
            (rng.choice(namespaces), f"app-{rng.randrange(10**6)}-{rng.randrange(10**5):05x}")
            for _ in range(SET_SIZE)
        ]
        for _ in range(SETS)
    ]


def _baseline(pods: list[tuple[str, str]]) -> str:
    hashes = sorted(
        xxhash.xxh64_intdigest(name.encode(), xxhash.xxh64_intdigest(ns.encode())) for ns, name in pods
    )
    stream = xxhash.xxh64()
    for h in hashes:
        stream.update(struct.pack("<Q", h))
    return "pfp0v001" + stream.hexdigest()


def run() -> dict[str, float]:
    sets = _pod_sets()
    assert all(fp.compute(s) == _baseline(s) for s in sets[:5])
    ours = median_seconds(lambda: [fp.compute(s) for s in sets], repeat=9)
    base = median_seconds(lambda: [_baseline(s) for s in sets], repeat=9)
    pods = SET_SIZE * SETS
    return {
        "pods_per_second": pods / ours,
        "baseline_pods_per_second": pods / base,
        "speedup_vs_baseline": base / ours,
        "microseconds_per_set_of_300": ours / SETS * 1e6,
    }


def summary() -> list[Row]:
    r = run()
    return [
        Row(
            "fingerprint, sets of 300 pods",
            f"{r['pods_per_second'] / 1e6:.2f} M pods/s ({r['speedup_vs_baseline']:.2f}x naive)",
            ">= 1 M pods/s",
            r["pods_per_second"] >= 1e6,
        )
    ]


def main() -> None:
    r = run()
    print(
        f"fingerprint: {r['pods_per_second']:,.0f} pods/s signed in sets of {SET_SIZE} (target >= 1,000,000)"
    )
    print(
        f"  {r['microseconds_per_set_of_300']:.0f} us per set;"
        f" baseline {r['baseline_pods_per_second']:,.0f} pods/s; ratio {r['speedup_vs_baseline']:.2f}x"
    )


if __name__ == "__main__":
    main()
