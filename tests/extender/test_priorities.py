"""Prioritize's answers from prepared pieces are the plain encoding, byte for byte."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from rte.consumer import kept
from rte.extender import priorities
from rte.extender.priorities import PriorityEncoder
from rte.extender.wire import host_priorities
from rte.yamlfile import encode_json


def _plain(names: list[str] | tuple[str, ...], scores: np.ndarray) -> bytes:
    return encode_json(host_priorities(list(zip(names, scores.tolist(), strict=True))))


@given(
    st.lists(
        st.tuples(st.text(max_size=8), st.integers(min_value=-(2**40), max_value=2**40)),
        max_size=20,
    ),
    st.booleans(),
)
def test_the_answer_is_the_plain_encoding(pairs: list[tuple[str, int]], as_tuple: bool) -> None:
    names = [n for n, _ in pairs]
    scores = np.array([s for _, s in pairs], np.int64)
    encoder = PriorityEncoder()
    given_names = tuple(names) if as_tuple else names
    assert encoder.encode(given_names, scores) == _plain(names, scores)
    assert encoder.encode(given_names, scores[::-1].copy()) == _plain(names, scores[::-1])  # remembered


def test_names_json_escapes_or_cannot_encode_take_the_plain_way() -> None:
    encoder = PriorityEncoder()
    for names in (("a\ud800", "b"), ('q"uote', "b"), ("tab\t", "b"), ("back\\slash", "é")):
        scores = np.array([100, 7], np.int64)
        assert encoder.encode(names, scores) == _plain(names, scores)


def test_a_list_is_remembered_by_identity_and_by_content_and_only_a_few_are_kept() -> None:
    encoder = PriorityEncoder(kept=2)
    names = tuple(f"worker-{i}" for i in range(50))
    scores = np.arange(50, dtype=np.int64) * 2
    first = encoder.encode(names, scores)
    assert encoder.encode(tuple(list(names)), scores) == first  # equal, not identical
    assert encoder.encode(list(names), scores) == first
    for k in range(3):  # other lists push the first out
        other = names[k:]
        assert encoder.encode(other, scores[k:]) == _plain(other, scores[k:])
    assert len(encoder._templates) <= 2 and len(encoder._by_id) <= 2
    assert encoder.encode(names, scores) == first == _plain(names, scores)


def test_scores_of_another_length_are_refused() -> None:
    encoder = PriorityEncoder()
    try:
        encoder.encode(("a", "b"), np.array([1], np.int64))
    except ValueError:
        return
    raise AssertionError("a score column shorter than the names was encoded")


def test_an_answer_is_remembered_per_list_for_the_same_scores_and_only_for_them() -> None:
    encoder = PriorityEncoder()
    names = tuple(f"worker-{i}" for i in range(30))
    rng = np.random.default_rng(11)
    previous, last = None, b""
    for _ in range(40):  # scores that repeat, change in one place, or on our scale only
        if previous is None or rng.random() < 0.3:
            scores = rng.integers(-5, 106, len(names))
        else:
            scores = previous.copy()
            if rng.random() < 0.5:
                scores[rng.integers(len(names))] += 1  # may map to the same extender score
        answer = encoder.encode(names, scores)
        assert answer == _plain(names, scores)
        if previous is not None and (scores == previous).all():
            assert answer is last
        previous, last = scores, answer


def test_a_list_too_long_to_remember_is_encoded_in_parts_and_kept_nowhere(monkeypatch: Any) -> None:
    """Issue #26, item 1: a list over the per-list budget builds no whole template and enters
    no memo; its answer is still the plain encoding."""
    monkeypatch.setattr(kept, "LIST_BYTES_KEPT", 1000)
    monkeypatch.setattr(priorities, "PART", 7)
    encoder = PriorityEncoder()
    names = tuple(f"ghost-{i}" for i in range(40))
    scores = np.arange(40, dtype=np.int64) * 3
    assert encoder.encode(names, scores) == _plain(names, scores)
    assert len(encoder._templates) == len(encoder._by_id) == len(encoder._answers) == 0
    short = names[:3]
    assert encoder.encode(short, scores[:3]) == _plain(short, scores[:3])
    assert len(encoder._templates) == 1  # a list within the budget is remembered as before
