"""The kernel's decision memo (:class:`rte.consumer.kernel.decide.DecisionMemo`) answers exactly
what a fresh decision answers, and never across a change of the table.

One pod, prepared once, is decided on the same candidate list after every step of random cache
histories (the worlds of ``test_batched``): the memo would answer it at every step if it missed
a change, so each answer is compared with a decision made without the memo.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from rte.consumer.kernel.decide import Verdicts, decide
from rte.consumer.kernel.memo import DecisionMemo
from rte.consumer.kernel.mirror import mirror_of
from rte.consumer.kernel.table import NodeTable
from rte.consumer.requests import prepare_pod
from rte.consumer.score import ScoringStrategy
from tests.consumer.test_batched import NODES, SETTINGS, World, a_pod, history, step


def _facts(v: Verdicts) -> tuple[object, ...]:
    scores = None if v.scores is None else v.scores.tolist()
    return (v.rows.tolist(), v.fits.tolist(), v.reasons(), v.numa_ids.tolist(), scores, v.scalar_rows)


@pytest.mark.parametrize("mode", sorted(SETTINGS))
def test_the_memo_answers_what_a_fresh_decision_answers_after_every_step(mode: str) -> None:
    rng = random.Random(f"memo-{mode}")
    world = World(SETTINGS[mode](), per_node=False)
    prep = prepare_pod(a_pod(rng, "kept"))
    strategy = ScoringStrategy("MostAllocated")
    candidates = [tuple(NODES), tuple(NODES[::2])]
    mirror = mirror_of(world.cache)
    for op, arg in history(rng, 250):
        if op == "decide":
            world.decide(*arg)  # other pods through the memo too
        else:
            step(rng, world, op, arg)
        for names in candidates:
            with mirror.lock:
                rows = mirror.sync(names, world.cache, prep.pod)
                selection = None if mirror.whole else rows
                for strat, failed in ((None, False), (strategy, True), (strategy, False), (None, False)):
                    kept = decide(prep, mirror.table, selection, strat, score_failed=failed, memo=mirror.memo)
                    fresh = decide(prep, mirror.table, selection, strat, score_failed=failed)
                    assert _facts(kept) == _facts(fresh), (mode, op)
    assert mirror.memo.hits > 0


def test_what_the_memo_hands_out_cannot_be_written_and_serves_one_table() -> None:
    world = World(SETTINGS["overreserve-history"](), per_node=False)
    rng = random.Random(3)
    for name in NODES:
        step(rng, world, "nrt", (name, rng.randrange(10**9)))
    prep = prepare_pod(a_pod(rng, "p"))
    mirror = mirror_of(world.cache)
    with mirror.lock:
        rows = mirror.sync(tuple(NODES), world.cache, prep.pod)
        verdicts = decide(prep, mirror.table, rows, memo=mirror.memo)
        again = decide(prep, mirror.table, rows, memo=mirror.memo)
    assert again.fits is verdicts.fits and mirror.memo.hits == 1
    with pytest.raises(ValueError):
        verdicts.fits[0] = not verdicts.fits[0]
    with pytest.raises(ValueError, match="one table"):
        DecisionMemo(NodeTable()).filtered(prep, mirror.table, rows)
    assert isinstance(verdicts.fits, np.ndarray)
