"""Loading :class:`~rte.settings.Settings` from its layers, checking it, and printing it back.

The layering rules (defaults < file < environment < flags) are described in :mod:`rte.settings`;
this module turns each layer's raw values into typed ones, merges them, validates the result and
renders the effective settings for ``rte run --dump-config``.
"""

from __future__ import annotations

import math
import os
import re
import socket
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from rte.durations import format_duration, parse_duration
from rte.errors import ConfigError
from rte.settings import (
    BOOL,
    CHOICE,
    CONFIG_FILE_ENV,
    DURATION,
    ENV_ALIASES,
    FLOAT,
    INT,
    LIST,
    PATH,
    FieldInfo,
    Settings,
    catalogue,
)
from rte.yamlfile import yaml_problem

# ---- value conversion ------------------------------------------------------------------------

_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


def _convert(info: FieldInfo, value: Any, source: str, *, text: bool) -> Any:
    """``value`` (a string when ``text``, else a YAML or flag value) as the field's type."""
    kind = info.kind
    if kind == BOOL:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise ConfigError(source, f"not a boolean: {value!r} (use true or false)")
    if kind == LIST:
        if isinstance(value, str) and text:
            return tuple(p.strip() for p in value.split(",") if p.strip())
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise ConfigError(source, f"not a list of strings: {value!r}")
    if kind == PATH:
        if value is None or value == "":
            return None
        if isinstance(value, str | os.PathLike):
            return Path(value)
        raise ConfigError(source, f"not a path: {value!r}")
    if kind == DURATION:
        if isinstance(value, int | float) and not isinstance(value, bool) and value == 0:
            return 0.0
        if not isinstance(value, str):
            raise ConfigError(source, f"not a duration: {value!r} (give a unit, e.g. '30s' or '500ms')")
        try:
            return parse_duration(value)
        except ValueError:
            raise ConfigError(source, f"not a duration: {value!r} (e.g. '500ms', '60s', '5m')") from None
    if kind in (INT, FLOAT):
        number: float
        if isinstance(value, bool):
            raise ConfigError(source, f"not a number: {value!r}")
        if isinstance(value, int | float):
            number = value
        elif isinstance(value, str):
            try:
                number = int(value) if kind == INT else float(value)
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
    # STR and CHOICE
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ConfigError(source, f"not a string: {value!r}")
    if kind == CHOICE and info.enum is not None:
        return info.enum.parse(value, source)
    if kind == CHOICE and value not in info.choices:
        raise ConfigError(source, f"{value!r} is not one of {', '.join(info.choices)}")
    return value


# ---- layers ----------------------------------------------------------------------------------


def _file_layer(path: Path) -> dict[str, tuple[Any, str]]:
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(str(path), f"cannot read config file: {e.strerror or e}") from e
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(str(path), yaml_problem(e)) from e
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(str(path), "expected a mapping of setting names to values")
    known = {i.name: i for i in catalogue()}
    out: dict[str, tuple[Any, str]] = {}
    for key, value in data.items():
        source = f"{path}: {key}"
        if key not in known:
            hint = key.replace("-", "_") if isinstance(key, str) else ""
            extra = f" (did you mean {hint!r}?)" if hint in known else ""
            raise ConfigError(source, f"unknown setting{extra}")
        out[key] = (_convert(known[key], value, source, text=False), source)
    return out


def _env_layer(env: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    out: dict[str, tuple[Any, str]] = {}
    for info in catalogue():
        for name in (*ENV_ALIASES.get(info.name, ()), info.env):
            if name in env:
                out[info.name] = (_convert(info, env[name], name, text=True), name)
    return out


def _flag_layer(flags: Mapping[str, Any]) -> dict[str, tuple[Any, str]]:
    known = {i.name: i for i in catalogue()}
    out: dict[str, tuple[Any, str]] = {}
    for key, value in flags.items():
        if value is None:
            continue  # not given on the command line
        if key not in known:
            raise ConfigError(f"--{key.replace('_', '-')}", "unknown setting")
        info = known[key]
        out[key] = (_convert(info, value, info.flag, text=isinstance(value, str)), info.flag)
    return out


_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def parse_address(text: str) -> tuple[str, int]:
    """``host:port`` (``:8080`` listens everywhere) -> (host, port); ``ValueError`` otherwise."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"not host:port: {text!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


def _validate(s: Settings) -> None:
    def fail(name: str, detail: str) -> None:
        raise ConfigError(s.origin(name), detail)

    for info in catalogue():
        value = getattr(s, info.name)
        if info.kind == DURATION and value < 0:
            fail(info.name, "must not be negative")
        if info.minimum is not None and value < info.minimum:
            shown = format_duration(info.minimum) if info.kind == DURATION else f"{info.minimum:g}"
            fail(info.name, f"must be at least {shown}")
    if len(s.node_name) > 253 or not _DNS_SUBDOMAIN.fullmatch(s.node_name):
        fail("node_name", f"{s.node_name!r} is not a valid object name (lowercase DNS subdomain)")
    if not s.podresources:
        fail("podresources", "must not be empty")
    if s.debounce > s.max_delay:
        fail("debounce", f"{format_duration(s.debounce)} exceeds max_delay {format_duration(s.max_delay)}")
    if s.retry_base > s.retry_cap:
        fail(
            "retry_base", f"{format_duration(s.retry_base)} exceeds retry_cap {format_duration(s.retry_cap)}"
        )
    if s.lease_duration and s.lease_duration < 1:
        fail("lease_duration", "must be 0 (off) or at least 1s")
    if s.http_address:
        try:
            parse_address(s.http_address)
        except ValueError as e:
            fail("http_address", str(e))


def load_settings(
    *,
    config_file: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
    hostname: Callable[[], str] = socket.gethostname,
) -> Settings:
    """Defaults < ``config_file`` (else ``$RTE_CONFIG``) < ``env`` (default ``os.environ``) < ``flags``.

    ``flags`` maps field names to flag values; ``None`` means "not given". Raises
    :class:`ConfigError` naming the layer and key of the first bad value.
    """
    environ = os.environ if env is None else env
    path = config_file or environ.get(CONFIG_FILE_ENV) or None
    layers: dict[str, tuple[Any, str]] = {}
    if path:
        layers.update(_file_layer(Path(path)))
    layers.update(_env_layer(environ))
    layers.update(_flag_layer(flags or {}))
    origins = {k: source for k, (_, source) in layers.items()}
    settings = replace(Settings(), origins=origins, **{k: v for k, (v, _) in layers.items()})
    if not settings.node_name:
        settings = replace(settings, node_name=hostname().lower())
    _validate(settings)
    return settings


def settings_as_dict(s: Settings) -> dict[str, Any]:
    """Plain values in the file format: durations as strings, paths as strings, None as ``""``."""
    out: dict[str, Any] = {}
    for info in catalogue():
        value = getattr(s, info.name)
        if info.kind == DURATION:
            value = format_duration(value)
        elif info.kind == PATH:
            value = "" if value is None else str(value)
        elif info.kind == LIST:
            value = list(value)
        elif info.enum is not None:
            value = value.value
        out[info.name] = value
    return out


def dump_settings(s: Settings) -> str:
    """The effective settings as a YAML config file (loadable with ``--config``), with comments."""
    import yaml

    lines = []
    values = settings_as_dict(s)
    for info in catalogue():
        if info.doc:
            lines.append(f"# {info.doc}")
        origin = s.origin(info.name)
        text = yaml.safe_dump({info.name: values[info.name]}, default_flow_style=True, width=10**6).strip()
        if text.startswith("{") and text.endswith("}"):
            text = text[1:-1]
        lines.append(text if origin == "default" else f"{text}  # from {origin}")
    return "\n".join(lines) + "\n"
