"""The byte-word answers of :mod:`rte.consumer.kernel.rowbits` equal NumPy's reductions."""

from __future__ import annotations

import numpy as np
import pytest

from rte.consumer.kernel.rowbits import first_true, rows_any


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 8, 16, 24, 32])
@pytest.mark.parametrize("density", [0.0, 0.05, 0.3, 1.0])
def test_equal_to_numpy_reductions(width: int, density: float) -> None:
    rng = np.random.default_rng(width * 100 + int(density * 10))
    matrix = rng.random((2000, width)) < density
    assert np.array_equal(rows_any(matrix), matrix.any(axis=1))
    assert np.array_equal(first_true(matrix), matrix.argmax(axis=1))


def test_every_single_true_of_eight_zones() -> None:
    """Each zone slot alone, and each lowest slot under every higher pattern."""
    patterns = np.arange(256, dtype=np.uint8)
    matrix = np.unpackbits(patterns[:, None], axis=1, bitorder="little").astype(np.bool_)
    assert np.array_equal(first_true(matrix), matrix.argmax(axis=1))
    assert np.array_equal(rows_any(matrix), matrix.any(axis=1))


def test_views_and_slices() -> None:
    """A non-contiguous matrix (a column slice) takes NumPy's path and still answers right."""
    rng = np.random.default_rng(7)
    wide = rng.random((500, 16)) < 0.2
    part = wide[:, 4:12]
    assert np.array_equal(first_true(part), part.argmax(axis=1))
    assert np.array_equal(rows_any(part), part.any(axis=1))
    rows = wide[100:300, :8].copy()
    assert np.array_equal(first_true(rows), rows.argmax(axis=1))
