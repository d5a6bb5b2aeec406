from fractions import Fraction

import pytest

from rte.model.quantity import (
    QuantityFormat,
    canonical_quantity,
    ceil_value,
    format_quantity,
    is_quantity,
    milli_value,
    parse_quantity,
    parse_quantity_with_format,
    quantity_text,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("8", 8),
        (8, 8),
        ("500m", Fraction(1, 2)),
        ("64Gi", 64 * 1024**3),
        ("4G", 4 * 10**9),
        ("1e3", 1000),
        ("1E3", 1000),
        ("0.5", Fraction(1, 2)),
        (".5", Fraction(1, 2)),
        ("5.", 5),
        ("+1", 1),
        ("-1", -1),
        ("1Ki", 1024),
        ("1Ei", 1024**6),
        ("2n", Fraction(2, 10**9)),
        ("3u", Fraction(3, 10**6)),
        ("1k", 1000),
        ("7P", 7 * 10**15),
        ("1.5e-3", Fraction(3, 2000)),
        ("98327445504", 98327445504),
    ],
)
def test_quantities_parse_exactly(text: str | int, value: int | Fraction) -> None:
    parsed = parse_quantity(text)
    assert parsed == value
    assert type(parsed) is type(value)


def test_precision_finer_than_a_nano_unit_rounds_up_like_kubernetes() -> None:
    assert parse_quantity("1.1n") == Fraction(2, 10**9)
    assert parse_quantity("20e-10") == Fraction(2, 10**9)
    assert parse_quantity("-1.1n") == Fraction(-1, 10**9)  # up means towards +infinity


@pytest.mark.parametrize(
    "text", ["", "abc", "12xyz", "1K", "1.2.3", "--1", "1e", "1e1.5", "Mi", "1 Mi", " 1", "0x10", "1kk", True]
)
def test_non_quantities_are_rejected_with_the_text_in_the_message(text: str) -> None:
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity(text)
    assert not is_quantity(text)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("1536Mi", "1536Mi"),
        ("1024Mi", "1Gi"),
        ("1.5Gi", "1536Mi"),
        ("0.5", "500m"),
        ("1.5", "1500m"),
        ("1000", "1k"),
        ("1024", "1024"),
        ("1500", "1500"),
        ("120", "120"),
        ("1.5e3", "1500"),
        ("1e3", "1e3"),
        ("1E3", "1e3"),
        ("12e6", "12e6"),
        ("100e-3", "100e-3"),
        ("0.1Ki", "102400m"),  # fractional binary values fall back to decimal SI
        ("1.5Ki", "1536"),
        ("512", "512"),
        ("512Ki", "512Ki"),
        ("0.5Ki", "512"),  # below 1024 binary values print as decimal
        ("0.001", "1m"),
        ("1n", "1n"),
        ("1.1n", "2n"),
        ("-0.5", "-500m"),
        ("+1", "1"),
        ("0", "0"),
        ("0Gi", "0"),
        ("5.", "5"),
        ("1000000", "1M"),
        ("1000000000000000000000", "1e21"),
    ],
)
def test_canonical_form_matches_what_the_apiserver_prints(text: str, canonical: str) -> None:
    assert canonical_quantity(text) == canonical
    # and the canonical text is a fixed point that parses to the same value
    assert canonical_quantity(canonical) == canonical
    assert parse_quantity(canonical) == parse_quantity(text)


def test_format_follows_the_suffix_family_of_the_input() -> None:
    assert parse_quantity_with_format("1Gi")[1] is QuantityFormat.BINARY_SI
    assert parse_quantity_with_format("1G")[1] is QuantityFormat.DECIMAL_SI
    assert parse_quantity_with_format("1")[1] is QuantityFormat.DECIMAL_SI
    assert parse_quantity_with_format("1e9")[1] is QuantityFormat.DECIMAL_EXPONENT
    assert format_quantity(2 * 1024**3, QuantityFormat.BINARY_SI) == "2Gi"
    assert format_quantity(2 * 10**9, QuantityFormat.DECIMAL_EXPONENT) == "2e9"


def test_published_text_is_a_plain_integer_in_base_units() -> None:
    assert quantity_text(98327445504) == "98327445504"
    assert quantity_text(1000) == "1000"
    assert quantity_text(Fraction(1, 2)) == "500m"


def test_value_rounds_up_and_milli_value_is_exact_in_thousandths() -> None:
    assert ceil_value(parse_quantity("500m")) == 1
    assert ceil_value(parse_quantity("2")) == 2
    assert milli_value(parse_quantity("1500m")) == 1500
    assert milli_value(parse_quantity("1.0001")) == 1001
    assert milli_value(3) == 3000
