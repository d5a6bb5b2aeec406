"""Reading one setting's value from text or YAML, checking its bounds, and writing it back."""

from __future__ import annotations

import math
import os
import re
from dataclasses import fields
from enum import Enum
from pathlib import Path
from typing import Any

from rte.durations import MAX_SECONDS, format_duration, parse_duration
from rte.errors import ConfigError, InputError, SettingError
from rte.settings.schema import BOOL, CHOICE, DURATION, FLOAT, INT, LIST, PATH, SETTING, Spec

_TRUE = frozenset({"true", "yes", "on", "1", "t", "y"})
_FALSE = frozenset({"false", "no", "off", "0", "f", "n"})
_ENV_LIST_SEPARATORS = re.compile(r"[,\s]+")


def convert(spec: Spec, value: Any, source: str, *, text: bool, env: bool = False) -> Any:
    """``value`` as the setting's type, checked; :class:`ConfigError` naming ``source`` otherwise.

    ``text``: the value is typed text (a flag or an environment variable) rather than YAML.
    ``env``: environment text, where list items may also be separated by whitespace.
    """
    if spec.optional and (value is None or (text and value == "")):
        return None
    if spec.kind == LIST:
        return _list(spec, value, source, text=text, env=env)
    result = _scalar(spec, value, source, text=text)
    check_bounds(spec, result, source)
    if spec.check is not None and isinstance(result, str):
        spec.check(result, source)
    return result


def _list(spec: Spec, value: Any, source: str, *, text: bool, env: bool) -> tuple[Any, ...]:
    item = spec.item or Spec("str")
    if isinstance(value, str):  # text, or a YAML string standing for a comma-separated list
        separators = _ENV_LIST_SEPARATORS if env else re.compile(",")
        parts = [p.strip() for p in separators.split(value) if p.strip()]
        return tuple(convert(item, p, source, text=True) for p in parts)
    if isinstance(value, list | tuple):
        out: list[Any] = []
        for v in value:
            if isinstance(v, str) and text:
                out.extend(_list(spec, v, source, text=True, env=env))
            else:
                out.append(convert(item, v, source, text=False))
        return tuple(out)
    raise ConfigError(source, f"not a list: {value!r}")


def _scalar(spec: Spec, value: Any, source: str, *, text: bool) -> Any:
    kind = spec.kind
    if kind == BOOL:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise ConfigError(source, f"not a boolean: {value!r} (use true or false)")
    if kind == PATH:
        if value is None or value == "":
            return None
        if isinstance(value, str | os.PathLike):
            return Path(value)
        raise ConfigError(source, f"not a path: {value!r}")
    if kind == DURATION:
        return _duration(spec, value, source)
    if kind in (INT, FLOAT):
        return _number(kind, value, source)
    # STR and CHOICE
    if value is None:
        value = ""
    if isinstance(value, Enum):
        value = value.value
    if not isinstance(value, str):
        raise ConfigError(source, f"not a string: {value!r}")
    if kind == CHOICE:
        return _choice(spec, value, source)
    return value


def _duration(spec: Spec, value: Any, source: str) -> float:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number:
        # YAML's .inf and .nan are floats too, and NaN would pass every bound below.
        if not math.isfinite(value) or value > MAX_SECONDS:
            raise ConfigError(source, f"not a duration: {value!r} (at most about 292 years)")
        return float(value)
    if not isinstance(value, str):
        raise ConfigError(source, f"not a duration: {value!r}")
    try:
        return parse_duration(value, bare_seconds=True)
    except ValueError:
        raise ConfigError(source, f"not a duration: {value!r} (e.g. '500ms', '60s', '5m')") from None


def _number(kind: str, value: Any, source: str) -> float | int:
    number: float
    if isinstance(value, bool):
        raise ConfigError(source, f"not a number: {value!r}")
    if isinstance(value, int | float):
        number = value
    elif isinstance(value, str):
        try:
            number = int(value.strip()) if kind == INT else float(value)
        except ValueError:
            raise ConfigError(
                source, f"not {'an integer' if kind == INT else 'a number'}: {value!r}"
            ) from None
    else:
        raise ConfigError(source, f"not a number: {value!r}")
    if kind == INT and not float(number).is_integer():
        raise ConfigError(source, f"not an integer: {value!r}")
    if not math.isfinite(number):
        raise ConfigError(source, f"not a finite number: {value!r}")
    return int(number) if kind == INT else float(number)


def _choice(spec: Spec, value: str, source: str) -> Any:
    wanted = value.strip().casefold()
    for name in spec.allowed:
        if name.casefold() == wanted:
            return spec.enum(name) if spec.enum is not None else name
    raise ConfigError(source, f"{value!r} is not one of {', '.join(spec.allowed)}")


def check_bounds(spec: Spec, value: Any, source: str) -> None:
    """:class:`ConfigError` when a number or duration is outside the setting's bounds."""
    if value is None or spec.kind not in (INT, FLOAT, DURATION):
        return
    if spec.kind == DURATION and value < 0:
        raise ConfigError(source, "must not be negative")
    if spec.minimum is not None and value < spec.minimum:
        raise ConfigError(source, f"must be at least {_shown(spec, spec.minimum)}, got {_shown(spec, value)}")
    if spec.above is not None and value <= spec.above:
        raise ConfigError(
            source, f"must be greater than {_shown(spec, spec.above)}, got {_shown(spec, value)}"
        )
    if spec.maximum is not None and value > spec.maximum:
        raise ConfigError(source, f"must be at most {_shown(spec, spec.maximum)}, got {_shown(spec, value)}")


def _shown(spec: Spec, value: float) -> str:
    if spec.kind == DURATION:
        return format_duration(value)
    return f"{value:,}" if spec.kind == INT and abs(value) >= 10_000 else f"{value:g}"


def plain(spec: Spec, value: Any) -> Any:
    """``value`` in the file format: durations as text, paths as strings, enums as their values."""
    if value is None:
        return "" if spec.kind == PATH else None
    if spec.kind == LIST:
        return [plain(spec.item or Spec("str"), v) for v in value]
    if spec.kind == DURATION:
        return format_duration(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    return value


def shown(spec: Spec, value: Any) -> str:
    """``value`` as a user types it (for ``--help``): ``500ms``, ``true``, ``cpu=1,memory=1``."""
    value = plain(spec, value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return "" if value is None else str(value)


def validate(settings: Any) -> None:
    """Check every setting field of the dataclass instance ``settings`` against its spec.

    For settings built in code rather than loaded: a value outside its bounds, not one of its
    choices (in canonical spelling) or refused by its check raises a
    :class:`~rte.errors.SettingError` naming the field.
    """
    for f in fields(settings):
        spec = f.metadata.get(SETTING)
        if spec is not None:
            _validate_value(spec, getattr(settings, f.name), f.name)


def _validate_value(spec: Spec, value: Any, name: str) -> None:
    if value is None and spec.optional:
        return
    try:
        if spec.kind == LIST:
            for item in value:
                _validate_value(spec.item or Spec("str"), item, name)
            return
        if spec.kind == CHOICE:
            allowed = spec.allowed if spec.enum is None else tuple(spec.enum)
            if value not in allowed:
                raise ConfigError(name, f"{value!r} is not one of {', '.join(spec.allowed)}")
        check_bounds(spec, value, name)
        if spec.check is not None and isinstance(value, str):
            spec.check(value, name)
    except InputError as e:
        raise SettingError(name, e.detail) from e
