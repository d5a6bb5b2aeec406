"""Loading a command's settings from their layers, and printing them back (``--dump-config``).

Layers apply as defaults < file < environment < flags; see :mod:`rte.settings`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from rte.errors import ConfigError, SettingError
from rte.settings.schema import FieldInfo, Schema
from rte.settings.values import convert, plain
from rte.yamlfile import read_documents

T = TypeVar("T")

Layer = dict[str, tuple[Any, str]]
"""Setting name -> (typed value, where it came from)."""


def file_layer(schema: Schema[Any], path: Path) -> Layer:
    """The settings in the YAML file ``path``: one mapping of setting names to values."""
    documents = read_documents(path)  # one-line errors for unreadable, binary or malformed files
    if len(documents) > 1:
        raise ConfigError(str(path), "expected one YAML document, found several")
    data = documents[0] if documents else {}
    if not isinstance(data, dict):
        raise ConfigError(str(path), "expected a mapping of setting names to values")
    known = schema.by_name
    out: Layer = {}
    for key, value in data.items():
        source = f"{path}: {key}"
        if key not in known:
            hint = key.replace("-", "_") if isinstance(key, str) else ""
            extra = f" (did you mean {hint!r}?)" if hint in known else ""
            raise ConfigError(source, f"unknown setting{extra}")
        out[key] = (convert(known[key].spec, value, source, text=False), source)
    return out


def env_layer(schema: Schema[Any], env: Mapping[str, str]) -> Layer:
    """The settings in ``env``. Unknown variables with the prefix are ignored on purpose:
    Kubernetes injects ``<SERVICE>_PORT``-style variables, and a Service named ``rte-...`` must
    not stop a command from starting."""
    out: Layer = {}
    for info in schema.fields:
        for name in info.env_names:
            if name in env:
                out[info.name] = (convert(info.spec, env[name], name, text=True, env=True), name)
    return out


def flag_layer(schema: Schema[Any], flags: Mapping[str, Any]) -> Layer:
    """``flags`` maps setting names to values as typed; ``None`` means "not given"."""
    known = schema.by_name
    out: Layer = {}
    for key, value in flags.items():
        if value is None:
            continue
        if key not in known:
            raise ConfigError(f"--{key.replace('_', '-')}", "unknown setting")
        info = known[key]
        text = isinstance(value, str | tuple | list)
        out[key] = (convert(info.spec, value, info.flag, text=text), info.flag)
    return out


def load(
    schema: Schema[T],
    *,
    config_file: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> T:
    """Defaults < ``config_file`` (else the schema's config variable) < ``env`` (default
    ``os.environ``) < ``flags``; :class:`ConfigError` naming the layer and key of a bad value."""
    environ = os.environ if env is None else env
    path = config_file or environ.get(schema.config_env) or None
    layers: Layer = {}
    if path:
        layers.update(file_layer(schema, Path(path)))
    layers.update(env_layer(schema, environ))
    layers.update(flag_layer(schema, flags or {}))
    origins = {name: source for name, (_, source) in layers.items()}
    values = {name: value for name, (value, _) in layers.items()}
    try:
        return schema.cls(**values, origins=origins)  # type: ignore[call-arg]
    except SettingError as e:
        raise located(schema, origins, e) from e


def located(schema: Schema[Any], origins: Mapping[str, str], error: SettingError) -> ConfigError:
    """``error`` (about a field) as a :class:`ConfigError` naming where that field's value came from.

    A value left at its default is named by its flag: that is where the user can change it.
    """
    info = schema.by_name.get(error.field)
    source = origins.get(error.field) or (info.flag if info is not None else error.field)
    return ConfigError(source, error.detail)


def origin_of(settings: Any, info: FieldInfo) -> str:
    origins: Mapping[str, str] = getattr(settings, "origins", {})
    return origins.get(info.name, "default")


def as_dict(schema: Schema[Any], settings: Any) -> dict[str, Any]:
    """Every setting's value in the file format (durations as text, paths as strings)."""
    return {info.name: plain(info.spec, getattr(settings, info.name)) for info in schema.fields}


def render_settings(schema: Schema[Any], settings: Any, *, title: str = "") -> str:
    """The settings as a YAML file ``--config`` reads back: each key under its docstring,
    with where a non-default value came from."""
    import yaml

    lines = [f"# {line}" if line else "#" for line in title.splitlines()]
    values = as_dict(schema, settings)
    for info in schema.fields:
        if info.doc:
            lines.append(f"# {info.doc}")
        text = yaml.safe_dump({info.name: values[info.name]}, default_flow_style=True, width=10**6).strip()
        if text.startswith("{") and text.endswith("}"):
            text = text[1:-1]
        origin = origin_of(settings, info)
        lines.append(text if origin == "default" else f"{text}  # from {origin}")
    return "\n".join(lines) + "\n"
