"""``implements`` answers as ``isinstance`` does for the caches' runtime protocols, from the
class where it can (:func:`rte.consumer.cache.interface.implements`)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pytest

from rte.consumer.cache.interface import BatchedCache, ScoreViewsCache, implements
from rte.consumer.cache.overreserve import OverReserveCache
from rte.consumer.cache.passthrough import PassthroughCache
from rte.consumer.store import NRTStore
from rte.testing.per_node_cache import PerNodeCache


class _Plain:
    pass


class _Scores:
    def score_views(self, nodes: Collection[str] | None = None) -> dict[str, Any]:
        return {}


class _Disabled(_Scores):
    score_views = None  # type: ignore[assignment]


class _Proxy:
    def __init__(self, target: object) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


def _given_later() -> _Plain:
    plain = _Plain()
    plain.score_views = lambda nodes=None: {}  # type: ignore[attr-defined]
    return plain


def _caches() -> list[object]:
    store = NRTStore()
    over = OverReserveCache(store)
    return [
        over,
        PassthroughCache(store),
        PerNodeCache(over),
        _Plain(),
        _Scores(),
        _Disabled(),
        _Proxy(over),
        _Proxy(_Plain()),
        _given_later(),
    ]


@pytest.mark.parametrize("protocol", [BatchedCache, ScoreViewsCache])
def test_implements_answers_as_isinstance_twice_in_a_row(protocol: type) -> None:
    for cache in _caches():
        for _ in range(2):  # the second answer from the class memo
            assert implements(cache, protocol) == isinstance(cache, protocol), (type(cache), protocol)


def test_what_the_front_ends_ask_of_the_caches() -> None:
    over, passthrough, per_node, *_ = _caches()
    assert implements(over, BatchedCache) and implements(over, ScoreViewsCache)
    assert implements(passthrough, BatchedCache) and not implements(passthrough, ScoreViewsCache)
    assert not implements(per_node, BatchedCache) and implements(per_node, ScoreViewsCache)
    assert implements(_Proxy(over), BatchedCache) and implements(_given_later(), ScoreViewsCache)
