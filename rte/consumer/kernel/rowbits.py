"""Per-row questions on a ``(rows x zone slots)`` bool matrix, answered on its bytes.

NumPy's ``matrix.any(axis=1)`` and ``matrix.argmax(axis=1)`` run a generic reduction per row:
some 120 µs and 60 µs for 5000 rows of 8 zones, a third of a whole Filter+Score. A bool is one
byte holding 0 or 1, so a C-contiguous row of 1, 2, 4 or 8 zones is one unsigned integer: the
row has a True where that integer is not 0 (one comparison, 4 µs), and its first True is the
lowest set byte, found from the lowest set bit (``x & -x``, a power ``2**(8k)``): multiplying
the word ``0x00 01 02 .. 07`` by it shifts the byte holding ``k`` to the top, where one shift
reads it (the multiplication wraps, as unsigned arithmetic does). Other widths, and
big-endian machines (where the first zone is the highest byte), take NumPy's own reductions.
Both answers are exactly those reductions' (``tests/consumer/test_rowbits.py``).
"""

from __future__ import annotations

import sys
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from rte.consumer.kernel.rows import Bools, Ints

_WORDS: dict[int, type[np.unsignedinteger]] = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_INDEX_BYTES = {
    width: (word(int.from_bytes(bytes(range(width)), "big")), word(8 * (width - 1)))
    for width, word in _WORDS.items()
}
"""Per width: the word whose bytes, from the top, are 0, 1, 2, ...; the shift to its top byte."""
_LITTLE = sys.byteorder == "little"


_Words = npt.NDArray[np.unsignedinteger[Any]]


def _words(matrix: Bools) -> _Words | None:
    """The rows of ``matrix`` as one unsigned integer each, when its layout allows (else None)."""
    if matrix.ndim != 2 or not matrix.flags.c_contiguous or not _LITTLE:
        return None
    word = _WORDS.get(matrix.shape[1])
    if word is None:
        return None
    return matrix.view(word).reshape(matrix.shape[0])


def rows_any(matrix: Bools) -> Bools:
    """``matrix.any(axis=1)``."""
    words = _words(matrix)
    if words is None:
        return cast(Bools, matrix.any(axis=1))
    return cast(Bools, words != 0)


def first_true(matrix: Bools) -> Ints:
    """``matrix.argmax(axis=1)``: the first True zone slot of each row, 0 where there is none
    (a new array the caller may write to)."""
    words = _words(matrix)
    if words is None:
        return cast(Ints, matrix.argmax(axis=1))
    indices, top = _INDEX_BYTES[matrix.shape[1]]
    lowest = np.negative(words)  # two's complement negation within the word; 0 stays 0
    lowest &= words  # one array for every step: a new one per step cost as much as the steps
    lowest *= indices
    lowest >>= top
    if lowest.dtype == np.uint64:  # 0 .. 7 read as int64 are the same bits: no copy
        return cast(Ints, lowest.view(np.int64))  # an all-False row gives 0, as argmax does
    return cast(Ints, lowest.astype(np.int64))


def count_true(flags: Bools) -> int:
    """How many are True. ``np.count_nonzero`` counts a bool array's bytes, several times faster
    than ``all()`` or ``any()`` (a generic reduction each: 1-2 µs of call overhead at 5000
    rows), so the kernel's "every row?" and "any row?" questions are asked as counts."""
    return int(np.count_nonzero(flags))
