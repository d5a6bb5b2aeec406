"""The fingerprint's verdicts on the pod watch's records equal fingerprint_pods' on whole pods, every time."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from rte.agent.compute.podset import PodGlob, SpecVerdicts, fingerprint_pods
from rte.agent.compute.podspec import PodSpec
from rte.model import fingerprint as fp
from rte.model.pod import Container, Pod
from rte.model.vocabulary import FingerprintMethod, InformerMode
from rte.podres.types import PodResources

NIC = "vendor.com/nic"
PUBLISHED = ("cpu", "memory", NIC)


def _spec(rng: random.Random, key: tuple[str, str]) -> Pod:
    requests: dict[str, int | Fraction] = {}
    if rng.random() < 0.7:
        requests["cpu"] = rng.choice((1, 2, Fraction(1, 2)))
    if rng.random() < 0.6:
        requests["memory"] = 2**30
    if rng.random() < 0.2:
        requests[NIC] = 1
    limits = dict(requests) if rng.random() < 0.6 else {}
    return Pod(
        key[0],
        key[1],
        node_name=rng.choice(("n", "n", "")),
        phase=rng.choice(("Pending", "Running", "Running", "Succeeded", "Failed")),
        containers=(Container("app", requests, limits),),
    )


@pytest.mark.parametrize("seed", range(8))
def test_the_remembered_verdicts_give_what_fingerprint_pods_gives(seed: int) -> None:
    rng = random.Random(seed)
    keys = [(f"ns-{i % 3}", f"pod-{i}") for i in range(40)]
    specs = {k: _spec(rng, k) for k in rng.sample(keys, 25)}
    memo = SpecVerdicts()
    for step in range(50):
        for _ in range(rng.randrange(3)):  # a few pods change, appear or go
            key = rng.choice(keys)
            if key in specs and rng.random() < 0.3:
                del specs[key]
            else:
                specs[key] = _spec(rng, key)
        listed = [PodResources(*k) for k in keys if rng.random() < 0.7]
        method = rng.choice(list(FingerprintMethod))
        published = rng.sample(PUBLISHED, rng.randrange(1, 4)) if step % 7 else PUBLISHED
        mode = rng.choice(list(InformerMode)) if step % 5 == 0 else InformerMode.DEDICATED
        exclude = (PodGlob.parse("ns-1/*"),) if step % 3 == 0 else ()
        expected = tuple(
            fingerprint_pods(
                listed,
                method,
                specs=specs,
                published_resources=published,
                informer_mode=mode,
                exclude=exclude,
            )
        )
        records = {k: PodSpec.of(p) for k, p in specs.items()}  # what the pod watch keeps
        assert fingerprint_pods(
            listed,
            method,
            specs=records,
            published_resources=published,
            informer_mode=mode,
            exclude=exclude,
        ) == list(expected)
        got = memo.fingerprint(
            records,
            {(p.namespace, p.name) for p in listed},
            method,
            published_resources=published,
            informer_mode=mode,
            exclude=exclude,
        )
        assert got == (expected, fp.compute(expected)), f"seed {seed}, step {step}"


def test_only_pods_not_seen_are_matched_against_the_exclusion_globs() -> None:
    rng = random.Random(1)
    specs = {("ns", f"p{i}"): PodSpec.of(_spec(rng, ("ns", f"p{i}"))) for i in range(30)}
    memo = SpecVerdicts()

    def fingerprint(*globs: str) -> None:
        memo.fingerprint(
            dict(specs),
            set(specs),
            FingerprintMethod.ALL,
            published_resources=PUBLISHED,
            informer_mode=InformerMode.DEDICATED,
            exclude=tuple(PodGlob.parse(g) for g in globs),
        )

    fingerprint()
    assert memo.matched == 0, "no globs, nothing matched"
    fingerprint("ns/p1*")
    assert memo.matched == 30
    specs[("ns", "p30")] = PodSpec.of(_spec(rng, ("ns", "p30")))  # one pod more
    fingerprint("ns/p1*")
    assert memo.matched == 31
    fingerprint("ns/p1*")
    assert memo.matched == 31
    fingerprint("ns/p2*")  # other globs: every pod again
    assert memo.matched == 62


def test_a_pod_the_api_deleted_keeps_its_last_spec_while_the_kubelet_still_lists_it() -> None:
    """Issue #26 item 8: the departed pod stays (same object) until the List drops it; a pod of
    the same name created again in the API takes its new spec."""
    from rte.agent.compute.podset import with_departed
    from rte.model.pod import Pod

    old, new, other = Pod("ns", "a", uid="1"), Pod("ns", "a", uid="2"), Pod("ns", "b")
    kept = with_departed({}, {old.key: old}, {old.key})
    assert kept == {old.key: old} and kept[old.key] is old
    assert with_departed({}, {old.key: old}, set()) == {}
    assert with_departed({new.key: new}, {old.key: old}, {old.key})[new.key] is new
    current = {other.key: other}
    assert with_departed(current, {}, {old.key}) is current  # nothing departed: the same mapping
