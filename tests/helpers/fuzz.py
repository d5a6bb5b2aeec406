"""What the parsers' fuzz tests share: the property every parser keeps, and input strategies.

The property (docs/agent.md, "Reliability"): a parser given anything returns a value or raises one
:class:`~rte.errors.InputError` whose message is one line and names where the bad input came
from. Any other exception (a ``KeyError``, a ``RecursionError``, a ``ValueError`` from deep
inside a library) fails the test, and Hypothesis prints the smallest input that raised it.

Strategies come in three kinds: documents of the right shape with a few fields mutated
(:func:`mutated`), arbitrary JSON-like values (:data:`json_values`, with huge numbers, unicode
and deep nesting) and raw text or bytes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from hypothesis import strategies as st

from rte.errors import InputError

T = TypeVar("T")


def value_or_input_error(call: Callable[[], T], source: str | tuple[str, ...]) -> T | InputError:
    """``call()``'s value, or the :class:`InputError` it raised after checking its message.

    ``source`` (or one of them) must start the error's ``source`` (a path, or the name given to
    the parser), so the message says which file or object was bad. Any other exception propagates.
    """
    try:
        return call()
    except InputError as e:
        check_one_line(e, source)
        return e


def check_one_line(error: InputError, source: str | tuple[str, ...]) -> None:
    message = str(error)
    assert message.splitlines() == [message], f"message spans lines: {message!r}"
    assert error.source.startswith(source), f"{error.source!r} does not name {source!r}"
    assert error.detail.strip(), f"no detail in {message!r}"


def value_or_value_error(call: Callable[[], T]) -> T | ValueError:
    """For the pure text parsers (``text -> value``), whose contract is a ``ValueError`` naming
    the text; the edge that read the text turns it into an :class:`InputError` naming the file."""
    try:
        return call()
    except ValueError as e:
        message = str(e)
        assert message.splitlines() == [message], f"message spans lines: {message!r}"
        return e


# ---- values ----------------------------------------------------------------------------------

huge_integers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**63, 2**64, -(2**63) - 1, 10**30, -(10**30), 10**300]),
)
"""Integers around and far beyond 64 bits (JSON numbers decode to any size)."""

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-1000, max_value=1000),
    huge_integers,
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["", "0", "-1", "1Gi", "500m", "0-3", "1e400", "∞", "\x00", "a\nb", "static"]),
)

json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=12), children, max_size=4),
    ),
    max_leaves=12,
)
"""Anything ``json.loads`` can return (finite floats: JSON has no NaN)."""


def nested(depth: int, leaf: Any = 0) -> Any:
    """``leaf`` inside ``depth`` alternating lists and objects, built without recursion."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


deep_values = st.integers(min_value=20, max_value=120).map(nested)
"""Deeply nested values, as far as Hypothesis can still print them in a report (its printer
recurses); nesting beyond Python's recursion limit is given as text, to the decoders."""

# Past each decoder's recursion limit (json's at about a thousand levels, PyYAML's at a few
# hundred) without going far beyond: PyYAML's scanner takes time quadratic in the depth.
deep_json_text = st.integers(min_value=50, max_value=1500).map(lambda n: "[" * n + "]" * n)
deep_yaml_text = st.integers(min_value=50, max_value=500).map(lambda n: "a: " + "[" * n + "]" * n)


def json_text(values: st.SearchStrategy[Any]) -> st.SearchStrategy[str]:
    """``values`` encoded as JSON (nesting past the encoder's own limit is left out)."""

    def encode(value: Any) -> str:
        try:
            return json.dumps(value)
        except (RecursionError, ValueError):
            return "[]"

    return values.map(encode)


# ---- mutating valid documents --------------------------------------------------------------


def _slots(doc: Any) -> Iterator[tuple[Any, Any]]:
    """Every (container, key-or-index) in ``doc``, without recursion."""
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                yield node, key
                stack.append(value)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                yield node, index
                stack.append(value)


_replacements = st.one_of(
    json_values,
    huge_integers,
    deep_values,
    st.text(max_size=30),
    st.sampled_from([None, True, [], {}, -1, -(2**63), "-5", "1e400", "0x10", "null", "Ki"]),
)


@st.composite
def mutated(draw: st.DrawFn, base: Any, *, max_changes: int = 3) -> Any:
    """``base`` (a decoded document) with up to ``max_changes`` fields replaced, removed or added."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(min_value=1, max_value=max_changes))):
        slots = list(_slots(doc))
        if not slots:
            return draw(_replacements)
        container, key = draw(st.sampled_from(slots))
        action = draw(st.sampled_from(["replace", "remove", "add", "wrap"]))
        if action == "replace":
            container[key] = draw(_replacements)
        elif action == "remove":
            del container[key]
        elif action == "add" and isinstance(container, dict):
            container[draw(st.text(max_size=12))] = draw(_replacements)
        elif action == "add":
            container.append(draw(_replacements))
        else:
            container[key] = [container[key]]
    return doc
