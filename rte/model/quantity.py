"""Kubernetes resource quantities: exact parsing and the canonical text the apiserver would print.

A quantity is a signed decimal number with an optional suffix: binary (``Ki`` .. ``Ei``), decimal
SI (``n u m k M G T P E``) or a decimal exponent (``e3``, ``E-6``). Kubernetes keeps them exact and
rounds anything finer than a nano-unit *up* to the next nano-unit; so do we.

Values are returned as an :data:`Amount`: a plain ``int`` whenever the quantity is integral (the
common case, and the fast one for comparisons) and a :class:`fractions.Fraction` otherwise
(``500m`` CPU). Both compare and add exactly with each other.

The canonical form follows the Go ``resource.Quantity`` rules: the suffix family of the input is
kept (binary, decimal SI, decimal exponent), trailing zeros are folded into the largest suffix that
keeps the number an integer, and binary values below 1024 or with a fraction fall back to decimal
SI. ``canonical_quantity("1536Mi") == "1536Mi"``, ``"1024Mi" -> "1Gi"``, ``"0.5" -> "500m"``,
``"1000" -> "1k"``, ``"1.5e3" -> "1500"``.
"""

from __future__ import annotations

import math
import re
from enum import Enum
from fractions import Fraction
from typing import TypeAlias

Amount: TypeAlias = int | Fraction
"""An exact quantity value: ``int`` when integral, ``Fraction`` otherwise."""


class QuantityFormat(Enum):
    """The suffix family a quantity was written in; it decides how it is printed back."""

    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


# The pattern of the NRT CRD's quantity fields (and of the Kubernetes parser), with the exponent
# restricted to an integer: the Go parser rejects fractional exponents even where the CRD regex
# would let them through.
_QUANTITY_RE = re.compile(
    r"^(?P<sign>[+-])?(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<binary>[KMGTPE]i)|(?P<decimal>[numkMGTPE])|[eE](?P<exponent>[+-]?[0-9]+))?$"
)

_BINARY_POWERS = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL_EXPONENTS = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_SUFFIX_OF_EXPONENT = {exp: suffix for suffix, exp in _DECIMAL_EXPONENTS.items()}
_SUFFIX_OF_BINARY_POWER = {power: suffix for suffix, power in _BINARY_POWERS.items()}

_NANO = 10**9
# Kubernetes caps decimal exponents well before this; the cap keeps a hostile "1e999999999" from
# building a gigantic integer.
_MAX_ABS_EXPONENT = 64


def _exact(value: Fraction) -> Amount:
    return value.numerator if value.denominator == 1 else value


def _round_up_to_nano(value: Fraction) -> Fraction:
    if (value * _NANO).denominator == 1:
        return value
    return Fraction(math.ceil(value * _NANO), _NANO)


def parse_quantity_with_format(value: str | int) -> tuple[Amount, QuantityFormat]:
    """Parse a quantity and report the suffix family it was written in.

    Raises :class:`ValueError` naming the offending text when it is not a quantity.
    """
    if isinstance(value, bool):  # bool is an int subclass; a quantity it is not
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return value, QuantityFormat.DECIMAL_SI
    if not isinstance(value, str):
        raise ValueError(f"not a quantity: {value!r}")
    if value.isdigit() and value.isascii():
        # Plain base units, as rte's NRTs hold every amount: the regex and Fractions below would
        # give the same int some 20 times slower (--nrt-file reads a million of them).
        return int(value), QuantityFormat.DECIMAL_SI
    match = _QUANTITY_RE.match(value)
    if match is None:
        raise ValueError(f"not a quantity: {value!r}")
    number = Fraction(match["number"])
    if match["binary"]:
        scaled = number * (1024 ** _BINARY_POWERS[match["binary"]])
        fmt = QuantityFormat.BINARY_SI
    elif match["decimal"]:
        scaled = number * Fraction(10) ** _DECIMAL_EXPONENTS[match["decimal"]]
        fmt = QuantityFormat.DECIMAL_SI
    elif match["exponent"] is not None:
        exponent = int(match["exponent"])
        if abs(exponent) > _MAX_ABS_EXPONENT:
            raise ValueError(f"quantity exponent out of range: {value!r}")
        scaled = number * Fraction(10) ** exponent
        fmt = QuantityFormat.DECIMAL_EXPONENT
    else:
        scaled = number
        fmt = QuantityFormat.DECIMAL_SI
    if match["sign"] == "-":
        scaled = -scaled
    return _exact(_round_up_to_nano(scaled)), fmt


def parse_quantity(value: str | int) -> Amount:
    """Parse a quantity (``"64Gi"``, ``"500m"``, ``"1e3"``, ``8``) into its exact value."""
    return parse_quantity_with_format(value)[0]


def is_quantity(value: object) -> bool:
    """True when ``value`` is a string or int the Kubernetes quantity parser accepts."""
    try:
        parse_quantity_with_format(value)  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


def _strip_factor(value: int, factor: int, limit: int | None = None) -> tuple[int, int]:
    times = 0
    while value != 0 and value % factor == 0 and (limit is None or times < limit):
        value //= factor
        times += 1
    return value, times


def _decimal_mantissa(value: Fraction) -> tuple[int, int]:
    """Return (mantissa, exponent), exponent a multiple of 3 and as large as the integer mantissa allows."""
    exponent = -9
    mantissa = int(value * _NANO)  # exact: values are already rounded to nano-units
    mantissa, times = _strip_factor(mantissa, 10)
    exponent += times
    shift = exponent % 3  # Python's % is non-negative, so this lowers the exponent to a multiple of 3
    return mantissa * 10**shift, exponent - shift


def format_quantity(value: Amount, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> str:
    """Render ``value`` the way Kubernetes prints a quantity of format ``fmt``."""
    exact = _round_up_to_nano(Fraction(value))
    if exact == 0:
        return "0"
    if fmt is QuantityFormat.BINARY_SI and (abs(exact) < 1024 or exact.denominator != 1):
        fmt = QuantityFormat.DECIMAL_SI  # Kubernetes avoids fractional binary forms
    if fmt is QuantityFormat.BINARY_SI:
        mantissa, power = _strip_factor(exact.numerator, 1024, limit=max(_SUFFIX_OF_BINARY_POWER))
        return f"{mantissa}{_SUFFIX_OF_BINARY_POWER.get(power, '')}"
    mantissa, exponent = _decimal_mantissa(exact)
    if exponent == 0:
        return str(mantissa)
    if fmt is QuantityFormat.DECIMAL_SI and exponent in _SUFFIX_OF_EXPONENT:
        return f"{mantissa}{_SUFFIX_OF_EXPONENT[exponent]}"
    return f"{mantissa}e{exponent}"


def canonical_quantity(value: str | int) -> str:
    """Return the canonical text Kubernetes would print for ``value`` (e.g. ``"1024Mi"`` -> ``"1Gi"``)."""
    amount, fmt = parse_quantity_with_format(value)
    return format_quantity(amount, fmt)


def quantity_text(value: Amount) -> str:
    """Text for publishing: a plain base-unit integer when integral, canonical decimal otherwise."""
    if isinstance(value, int):
        return str(value)
    return format_quantity(value)


def ceil_value(value: Amount) -> int:
    """Kubernetes ``Quantity.Value()``: the value rounded up to an integer (``500m`` -> 1)."""
    return value if isinstance(value, int) else math.ceil(value)


def milli_value(value: Amount) -> int:
    """Kubernetes ``Quantity.MilliValue()``: the value in thousandths, rounded up."""
    return value * 1000 if isinstance(value, int) else math.ceil(value * 1000)
