"""The distinct reason texts of one decision, each with a code (its index).

Every row the kernel admits to one zone has the reason "fits NUMA zone <id>"
(:func:`rte.consumer.kubelet_filter.fits_zone_reason`). A decision's texts therefore start with
those of zones 0 .. the table's highest NUMA id, in order, so that a zone's code *is* its NUMA
id: the rows' codes are their zone ids, with no per-row lookup, count or gather (finding the
distinct zones of 5000 rows and mapping them to codes was a tenth of a whole Filter + Score).
Texts no row uses cost nothing: callers read texts through codes. NUMA ids are at most
:data:`~rte.consumer.numaview.MAX_NUMA_ID`, so the prefix is short.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache

from rte.consumer.kubelet_filter import fits_zone_reason


@cache
def _zone_texts(count: int) -> tuple[tuple[str, ...], Mapping[str, int]]:
    """The reasons of zones 0 .. count-1 and their codes, made once per count (shared, unchanged)."""
    texts = tuple(fits_zone_reason(numa_id) for numa_id in range(count))
    return texts, {text: code for code, text in enumerate(texts)}


class ReasonTexts:
    """Distinct reason texts, each with a code: ``items[code]``.

    ``zones``: start with the reasons of zones 0 .. zones-1 (code = NUMA id); ``items``: start
    with these texts instead (distinct), e.g. an earlier decision's, to extend them.
    """

    def __init__(self, items: Sequence[str] = (), *, zones: int = 0) -> None:
        self._shared: Mapping[str, int]
        if zones:
            prefix, self._shared = _zone_texts(zones)
            self.items: list[str] = list(prefix)
        else:
            self.items = list(items)
            self._shared = {text: code for code, text in enumerate(self.items)}
        self._added: dict[str, int] = {}

    def code(self, text: str) -> int:
        code = self._shared.get(text)
        if code is None:
            code = self._added.get(text)
            if code is None:
                code = self._added[text] = len(self.items)
                self.items.append(text)
        return code
