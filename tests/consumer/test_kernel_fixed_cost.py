"""What the kernel's cheaper usual case (issue #27's floor ratio) must not change.

A whole-table decision where every row fits a zone takes shortcuts: a zone's reason code is its
NUMA id (:mod:`rte.consumer.kernel.texts`), the zone of a row whose ids are its slots is the
slot itself (nothing gathered), and the outcome's arrays are the verdicts (no defaults filled).
These tests hold each shortcut to the scalar path (:func:`rte.consumer.filter.filter_node`) on
tables where it applies and where it must not (sparse NUMA ids, some rows not placed, a
selection of rows), and check that decisions kept side by side never share an array.
"""

from __future__ import annotations

import numpy as np
import pytest

from rte.consumer.api import evaluate_table
from rte.consumer.filter import filter_node
from rte.consumer.kernel.decide import Verdicts, decide, filter_rows
from rte.consumer.kernel.table import NodeTable
from rte.consumer.kernel.texts import ReasonTexts
from rte.consumer.kubelet_filter import fits_zone_reason
from rte.consumer.numaview import NumaView, build_view
from rte.consumer.requests import RecentPods, prepare_pod
from rte.consumer.score import Scorer, ScoringStrategy
from rte.model.pod import Container, Pod
from rte.model.quantity import Amount
from rte.model.topology import Attribute, NodeTopology, ResourceInfo, Zone
from rte.model.vocabulary import Compat

GI = 2**30


def _view(name: str, free: dict[int, tuple[int, int]], policy: str = "single-numa-node") -> NumaView:
    """A node whose zone ``node-<id>`` has (free CPUs, free GiB of memory)."""
    zones = tuple(
        Zone(
            f"node-{numa_id}",
            resources=(
                ResourceInfo("cpu", 32, 32, cpus),
                ResourceInfo("memory", 64 * GI, 64 * GI, gib * GI),
            ),
        )
        for numa_id, (cpus, gib) in free.items()
    )
    attrs = (Attribute("topologyManagerPolicy", policy), Attribute("topologyManagerScope", "container"))
    return build_view(NodeTopology(name, zones=zones, attributes=attrs))


def _pod(cpus: int, gib: int) -> Pod:
    requests: dict[str, Amount] = {"cpu": cpus, "memory": gib * GI}
    return Pod("ns", "p", containers=(Container("c", requests, requests),))


SLOTS = {0: (2, 8), 1: (8, 8), 2: (8, 64), 3: (1, 1)}  # ids 0..3: the pod fits zone 1
SPARSE = {1: (1, 1), 4: (8, 8), 9: (8, 8)}  # ids 1, 4, 9: the pod fits zone 4 (slot 1)
HIGH = {2: (8, 8), 3: (8, 8)}  # ids 2, 3: the pod fits zone 2 (slot 0)
FULL = {0: (1, 1), 1: (1, 1)}  # the pod fits no zone: refused


def _check(verdicts: Verdicts, views: list[NumaView], rows: list[int], strategy: ScoringStrategy) -> None:
    prep = prepare_pod(_pod(4, 4))
    scorer = Scorer(prep, strategy)
    assert verdicts.scores is not None
    for k, row in enumerate(rows):
        want = filter_node(prep, views[row])
        assert (bool(verdicts.fits[k]), verdicts.reason(k), verdicts.numa_id(k)) == (
            want.fits,
            want.reason,
            want.numa_id,
        ), views[row].node_name
        assert verdicts.score(k) == (scorer(views[row]) if want.fits else None)


@pytest.mark.parametrize(
    ("layouts", "rows"),
    [
        ([SLOTS, SLOTS, SLOTS], None),  # every row placed, ids = slots: numa is the slot
        ([SLOTS, SPARSE, HIGH], None),  # every row placed, some ids not slots: read from the table
        ([SPARSE, HIGH, SPARSE], None),
        ([SLOTS, FULL, SPARSE, HIGH], None),  # one row refused: masks
        ([SLOTS, FULL, SLOTS], None),
        ([SPARSE, SLOTS, HIGH, SLOTS], [3, 1]),  # a selection of slot rows from a mixed table
        ([SPARSE, SLOTS, HIGH, SLOTS], [2, 0, 1]),
        ([FULL, SLOTS, HIGH, SPARSE, SLOTS], [1, 2, 3]),  # an ascending run: read as a slice
        ([FULL, SLOTS, HIGH, SPARSE, SLOTS], [2, 3, 4]),
        ([FULL, SLOTS, HIGH, SPARSE, SLOTS], [1, 1, 3]),  # a span of 3 holding 3 rows, not a run
        ([FULL, SLOTS, HIGH, SPARSE, SLOTS], [3, 2, 4]),
    ],
)
def test_zones_and_their_reasons_equal_the_scalar_path(
    layouts: list[dict[int, tuple[int, int]]], rows: list[int] | None
) -> None:
    views = [_view(f"n{i}", free) for i, free in enumerate(layouts)]
    table = NodeTable.of([v.node_name for v in views], views)
    strategy = ScoringStrategy("LeastAllocated", {"cpu": 1, "memory": 1})
    verdicts = decide(prepare_pod(_pod(4, 4)), table, rows, strategy)
    _check(verdicts, views, rows if rows is not None else list(range(len(views))), strategy)


def test_the_table_knows_which_rows_name_zones_by_slot_and_its_highest_id() -> None:
    views = [_view("a", SLOTS), _view("b", SPARSE)]
    table = NodeTable.of(["a", "b"], views)
    assert table.slot_ids[:2].tolist() == [True, False]
    assert table.max_numa_id == 9
    table.put(1, _view("b", HIGH))  # rewritten with other zones
    table.put(0, None)  # no NRT: no zone to name
    assert table.slot_ids[:2].tolist() == [True, False]
    table.put(1, _view("b", SLOTS))
    assert table.slot_ids[:2].tolist() == [True, True]
    assert table.max_numa_id == 9  # never lowered: a longer prefix of texts is harmless
    grown = NodeTable()
    grown.put(grown.row("c"), _view("c", HIGH))
    assert (grown.slot_ids[0], grown.max_numa_id) == (False, 3)


def test_a_zones_code_is_its_numa_id() -> None:
    texts = ReasonTexts(zones=10)
    assert [texts.code(fits_zone_reason(i)) for i in range(10)] == list(range(10))
    other = texts.code("something else")
    assert (other, texts.code("something else"), texts.items[other]) == (10, 10, "something else")
    merged = ReasonTexts(texts.items)
    assert merged.code(fits_zone_reason(3)) == 3 and merged.code("new") == 11


def test_every_row_placed_shares_no_array_with_another_decision() -> None:
    """Two whole-table decisions kept side by side (the table rewritten between them) each keep
    their own verdicts; where one decision's zones and codes are the same array, it is read-only,
    so no caller can change one without the other."""
    views = [_view(f"n{i}", SLOTS) for i in range(6)]
    table = NodeTable.of([v.node_name for v in views], views)
    strategy = ScoringStrategy("LeastAllocated", {"cpu": 1, "memory": 1})
    prep = prepare_pod(_pod(4, 4))
    first = decide(prep, table, None, strategy)
    kept = (first.fits.copy(), first.reason_codes.copy(), first.numa_ids.copy(), first.reasons())
    table.put(2, _view("n2", {0: (8, 8), 1: (1, 1), 2: (8, 64), 3: (1, 1)}))  # now zone 0
    second = decide(prep, table, None, strategy)
    arrays = ("fits", "reason_codes", "numa_ids", "scores", "rows")
    for a in arrays[:-1]:
        for b in arrays[:-1]:
            assert not np.shares_memory(getattr(first, a), getattr(second, b)), (a, b)
    assert (first.fits.tolist(), first.reason_codes.tolist(), first.numa_ids.tolist()) == (
        kept[0].tolist(),
        kept[1].tolist(),
        kept[2].tolist(),
    )
    assert first.reasons() == kept[3] and first.numa_id(2) == 1 and second.numa_id(2) == 0
    assert first.scores is not None and first.scores.flags.writeable  # callers weigh scores
    for verdicts in (first, second):
        if np.shares_memory(verdicts.numa_ids, verdicts.reason_codes):
            with pytest.raises(ValueError):
                verdicts.numa_ids[0] = 3
    filtered = filter_rows(prep, table, None, None)
    assert filtered.flat is not None and not filtered.numa.flags.writeable


def test_some_rows_left_to_the_scalar_path_keep_their_own_zone_and_position() -> None:
    """A row the kernel leaves undecided (``restricted`` with ``prefer-closest-numa-nodes`` is
    not the fast path's) gets its zone from the scalar path; the kernel's positions (Score's
    input) stay -1 there, even where zones are slots and the zone array starts as the position."""
    closest = NodeTopology(
        "closest",
        zones=tuple(
            Zone(
                f"node-{i}",
                resources=(ResourceInfo("cpu", 32, 32, 8), ResourceInfo("memory", 64 * GI, 64 * GI, 8 * GI)),
            )
            for i in range(2)
        ),
        attributes=(
            Attribute("topologyManagerPolicy", "restricted"),
            Attribute("topologyManagerScope", "container"),
            Attribute("topologyManagerOptionPreferClosestNumaNodes", "true"),
        ),
    )
    views = [_view("a", SLOTS), build_view(closest), _view("c", SLOTS)]
    table = NodeTable.of([v.node_name for v in views], views)
    prep = prepare_pod(_pod(4, 4))
    filtered = filter_rows(prep, table, None, None)
    assert filtered.scalar.tolist() == [False, True, False]
    assert filtered.position.tolist() == [1, -1, 1]
    assert filtered.numa.tolist() == [1, 0, 1]
    strategy = ScoringStrategy("MostAllocated", {"cpu": 1, "memory": 1})
    _check(decide(prep, table, None, strategy), views, [0, 1, 2], strategy)


def test_a_pod_evaluated_again_is_prepared_once_while_unchanged() -> None:
    """:class:`RecentPods` (what :func:`rte.consumer.api.evaluate_table` prepares through) hands
    back the same preparation for the same unchanged pod, and prepares afresh a pod that merely
    looks the same, one whose requests were changed in place, or one whose memo grew too big."""
    recent = RecentPods(kept=2, memo_limit=8)
    pod = _pod(4, 4)
    first = recent.prepare(pod)
    assert recent.prepare(pod) is first and recent.hits == 1
    assert recent.prepare(pod, Compat.REFERENCE) is not first  # another rule set
    twin = _pod(4, 4)
    assert recent.prepare(twin) is not first  # equal, but another pod: its own memo
    assert recent.prepare(pod) is not first  # forgotten: two kept, two newer
    again = recent.prepare(pod)
    assert recent.prepare(pod) is again
    pod.containers[0].requests["cpu"] = 6  # type: ignore[index]  # changed in place
    changed = recent.prepare(pod)
    assert changed is not again and changed.app[0].items[0].amount == 6
    changed.memo.update({("filler", k): k for k in range(9)})
    assert recent.prepare(pod) is not changed  # a memo over the limit is not kept on


def test_evaluate_table_twice_with_one_pod_gives_equal_verdicts() -> None:
    views = [_view("a", SLOTS), _view("b", SPARSE), _view("c", FULL)]
    table = NodeTable.of([v.node_name for v in views], views)
    pod = _pod(4, 4)
    first, second = evaluate_table(pod, table), evaluate_table(pod, table)
    assert first.fits.tolist() == second.fits.tolist() == [True, True, False]
    assert first.reasons() == second.reasons() and first.numa_ids.tolist() == second.numa_ids.tolist()
    assert first.scores is not None and second.scores is not None
    assert first.scores.tolist() == second.scores.tolist()
