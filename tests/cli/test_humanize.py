"""The views' ages and amounts read as kubectl prints them (rte.commands.humanize)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from rte.commands.humanize import age_text, aligned, amount_text, short_bytes


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "<none>"),
        (-3, "0s"),
        (0.9, "0s"),
        (119, "119s"),
        (120, "2m"),
        (185, "3m5s"),
        (599, "9m59s"),
        (600, "10m"),
        (179 * 60 + 59, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 25 * 60, "3h25m"),
        (8 * 3600, "8h"),
        (47 * 3600 + 59 * 60, "47h"),
        (2 * 86400 + 5 * 3600, "2d5h"),
        (8 * 86400, "8d"),
        (729 * 86400, "729d"),
        (800 * 86400, "2y70d"),
        (10 * 365 * 86400, "10y"),
    ],
)
def test_ages_use_two_units_while_the_smaller_one_still_matters(seconds: float | None, text: str) -> None:
    assert age_text(seconds) == text


def test_byte_amounts_get_binary_suffixes_and_everything_else_its_quantity_text() -> None:
    assert short_bytes(0) == "0"
    assert short_bytes(512) == "512"
    assert short_bytes(2**30) == "1Gi"
    assert short_bytes(98703962112) == "91.9Gi"
    assert short_bytes(3 * 2**29) == "1.5Gi"
    assert amount_text("hugepages-2Mi", 1024 * 2**20) == "1Gi"
    assert amount_text("cpu", Fraction(3, 2)) == "1500m"
    assert amount_text("example.com/nic", 4) == "4"


def test_columns_are_aligned_three_spaces_apart_without_trailing_blanks() -> None:
    assert aligned([["A", "BB", ""], ["CCC", "D", ""]]) == ["A     BB", "CCC   D"]
    assert aligned([]) == []
