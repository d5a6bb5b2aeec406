"""A prioritize answer's JSON from a column of scores, with the per-node text prepared once per
candidate list.

kube-scheduler sends prioritize the nodes that passed filter, and for pod after pod that is
mostly the same list. The answer, a ``HostPriorityList``
(``[{"Host":"NAME","Score":N},...]``, kubernetes ``staging/src/k8s.io/kube-scheduler/extender/v1``),
is each name between constant pieces and a score of 0..10. So the bytes up to each score
(``,{"Host":"NAME","Score":``) are encoded once per list and kept for the last few lists; an
answer is then one ``bytes.join`` of those pieces interleaved with the scores' pre-encoded tails.
At 5000 candidates that is about a tenth of building each entry as a string per request (which
was 40 % of the server's time per round trip at 5000 candidates).

The bytes are those of ``encode_json(host_priorities(...))`` exactly (the tests hold the two
equal). A list holding a name that JSON must escape (node names are DNS subdomains, which never
do) or that is not valid UTF-8 text is encoded the plain way.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from rte.consumer.kept import KeptByCost, names_cost, too_long
from rte.consumer.nodescore import MAX_SCORE
from rte.extender.wire import MAX_EXTENDER_PRIORITY, extender_score, host_priorities
from rte.yamlfile import encode_json

_ESCAPED = re.compile(r'[\x00-\x1f"\\]')
"""What orjson escapes in a string; a name free of these is its own JSON text between quotes."""

_ON_SCALE = np.array([extender_score(s) for s in range(MAX_SCORE + 1)], np.int64)
_TAILS = np.array([b"%d}" % s for s in range(MAX_EXTENDER_PRIORITY + 1)] + [b""], dtype=object)[:-1]
"""Per score on the extender's scale, the bytes that end its entry (an object array, so that a
column of scores picks its tails in one indexing)."""

LISTS_KEPT = 8
"""Candidate lists whose pieces are kept (a list of 5000 names: about 0.5 MB), within
:data:`~rte.consumer.kept.MEMO_BYTES_KEPT`."""

Scores = np.ndarray[Any, np.dtype[np.int64]]

_UNKNOWN: Any = object()


class PriorityEncoder:
    """Encodes ``HostPriorityList`` answers; thread-safe, remembers the last :data:`LISTS_KEPT` lists."""

    def __init__(self, kept: int = LISTS_KEPT) -> None:
        self.kept = kept
        self._lock = threading.Lock()
        self._templates: KeptByCost[tuple[str, ...], list[bytes] | None] = KeptByCost(kept)
        """Per candidate list: the answer's pieces with every score's place empty (None: the
        list must be encoded the plain way). Bounded in bytes (:mod:`rte.consumer.kept`): a
        list's pieces cost about twice its names."""
        self._by_id: KeptByCost[int, tuple[tuple[str, ...], list[bytes] | None]] = KeptByCost(kept)
        """The same by the identity of the sequence given (checked to be the one remembered)."""
        self._answers: KeptByCost[tuple[str, ...], tuple[Scores, bytes]] = KeptByCost(kept)
        """Per candidate list, the last answer and its scores on the extender's scale: the next
        pod of a ReplicaSet on unchanged nodes scores the same (joining 10,000 pieces at 5000
        candidates costs more than comparing the scores)."""

    def encode(self, names: Sequence[str], scores: Scores) -> bytes:
        """The JSON of :func:`~rte.extender.wire.host_priorities` of ``zip(names, scores)``,
        scores given on our 0..100 scale."""
        if not names:
            return b"[]"
        # The decoder gives a list sent again as the very same tuple: found by identity first.
        same = self._by_id.values.get(id(names))
        if same is not None and same[0] is names:
            key, template = same
        else:
            key = names if isinstance(names, tuple) else tuple(names)
            if too_long(key):  # never kept (a hostile list: issue #26): no template either
                return _encode_in_parts(key, scores)
            template = self._templates.values.get(key, _UNKNOWN)
            if template is _UNKNOWN:  # never seen, or pushed out (by another thread, even just now)
                template = _template(key)
            cost = 3 * names_cost(key)
            with self._lock:
                self._templates.keep(key, template, cost)
                if key is names:  # a tuple, held here: its id stays its own
                    self._by_id.keep(id(names), (key, template), cost)
        if template is None:
            pairs = zip(key, scores.tolist(), strict=True)
            return encode_json(host_priorities(list(pairs)))
        on_scale = _ON_SCALE[np.minimum(np.maximum(scores, 0), MAX_SCORE)]
        last = self._answers.values.get(key)
        if last is not None and np.array_equal(last[0], on_scale):
            return last[1]
        parts = template.copy()
        parts[1:-1:2] = _TAILS[on_scale].tolist()
        answer = b"".join(parts)
        with self._lock:
            self._answers.keep(key, (on_scale, answer), len(answer) + on_scale.nbytes)
        return answer


PART = 8192
"""Names per part of an answer encoded in parts (:func:`_encode_in_parts`)."""


def _encode_in_parts(names: tuple[str, ...], scores: Scores) -> bytes:
    """The answer for a list too long to remember, a part at a time: a whole template of a
    million names (two byte strings a name) cost more than the answer it builds."""
    pieces: list[bytes] = []
    for start in range(0, len(names), PART):
        part = PriorityEncoder(kept=0).encode(names[start : start + PART], scores[start : start + PART])
        pieces.append(part[1:-1])  # without its brackets
    return b"[" + b",".join(pieces) + b"]"


def _template(names: tuple[str, ...]) -> list[bytes] | None:
    """``[prefix0, <score 0>, prefix1, <score 1>, ..., b"]"]`` with empty scores; None when a
    name needs escaping or cannot be encoded."""
    if _ESCAPED.search("".join(names)):
        return None
    try:
        encoded = [name.encode() for name in names]
    except UnicodeEncodeError:  # a lone surrogate: orjson refuses it, json escapes it
        return None
    parts: list[bytes] = [b""] * (2 * len(encoded) + 1)
    parts[0:-1:2] = [b',{"Host":"' + name + b'","Score":' for name in encoded]
    parts[0] = b"[" + parts[0][1:]
    parts[-1] = b"]"
    return parts
