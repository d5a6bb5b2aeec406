"""Loading a command's settings from their layers, and printing them back (``--dump-config``).

Layers apply as defaults < file < environment < flags; see :mod:`rte.settings`.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from rte.errors import ConfigError, SettingError
from rte.settings.schema import ENV_PREFIXES, OTHER_ENV, FieldInfo, Schema
from rte.settings.values import convert, plain
from rte.yamlfile import read_documents

T = TypeVar("T")

Layer = dict[str, tuple[Any, str]]
"""Setting name -> (typed value, where it came from)."""

Warn = Callable[[str], None]
"""Where a one-line warning goes (a former name used, an unknown variable)."""

# The variables Kubernetes injects for each Service in the pod's namespace
# (kubernetes/kubernetes pkg/kubelet/envvars/envvars.go, FromServices): a Service named
# "rte-metrics" gives RTE_METRICS_SERVICE_HOST, RTE_METRICS_PORT_8080_TCP_ADDR and so on.
_SERVICE_ENV = re.compile(r".*_(SERVICE_HOST|SERVICE_PORT(_\w+)?|PORT(_\d+_(TCP|UDP|SCTP)(_\w+)?)?)")


def stderr_warning(message: str) -> None:
    """The default :data:`Warn`: ``rte: warning: <message>`` on stderr."""
    sys.stderr.write(f"rte: warning: {message}\n")


def deprecated(old: str, new: str) -> str:
    """The one-line warning for a former spelling."""
    return f"{old} is deprecated and will be removed in the next release; use {new}"


def file_layer(schema: Schema[Any], path: Path, warn: Warn = stderr_warning) -> Layer:
    """The settings in the YAML file ``path``: one mapping of setting names to values."""
    documents = read_documents(path)  # one-line errors for unreadable, binary or malformed files
    if len(documents) > 1:
        raise ConfigError(str(path), "expected one YAML document, found several")
    data = documents[0] if documents else {}
    if not isinstance(data, dict):
        raise ConfigError(str(path), "expected a mapping of setting names to values")
    known = schema.by_name
    out: Layer = {}
    for key, value in sorted(data.items(), key=lambda kv: str(kv[0]) in known):  # former names first
        source = f"{path}: {key}"
        info = known.get(key) if isinstance(key, str) else None
        if info is None and isinstance(key, str) and key in schema.by_old_name:
            info = schema.by_old_name[key]
            warn(deprecated(source, f"{info.name!r}"))
        if info is None:
            hint = key.replace("-", "_") if isinstance(key, str) else ""
            extra = f" (did you mean {hint!r}?)" if hint in known else ""
            raise ConfigError(source, f"unknown setting{extra}")
        out[info.name] = (convert(info.spec, value, source, text=False), source)
    return out


def env_layer(schema: Schema[Any], env: Mapping[str, str], warn: Warn = stderr_warning) -> Layer:
    """The settings in ``env``.

    A variable with the prefix that names no setting is warned about, not refused: it is most
    likely a misspelling, but Kubernetes also injects ``<SERVICE>_PORT``-style variables, and a
    Service named ``rte-...`` must not stop a command from starting (those are not warned about).
    """
    out: Layer = {}
    for info in schema.fields:
        for old in info.spec.old_names:
            name = schema.env_of(old)
            if name in env:
                warn(deprecated(name, info.env))
                out[info.name] = (convert(info.spec, env[name], name, text=True, env=True), name)
        for name in info.env_names:
            if name in env:
                out[info.name] = (convert(info.spec, env[name], name, text=True, env=True), name)
    for name in unknown_variables(schema, env):
        known = [n for info in schema.fields for n in info.env_names] + [schema.config_env]
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        warn(f"{name}: no such setting of this command, ignored{hint}")
    return out


def unknown_variables(schema: Schema[Any], env: Mapping[str, str]) -> list[str]:
    """The variables under the schema's prefix that it does not read (nor another command does)."""
    prefix = schema.env_prefix
    others = [p for p in ENV_PREFIXES if len(p) > len(prefix) and p.startswith(prefix)]
    read = {n for info in schema.fields for n in info.env_names}
    read |= {schema.env_of(old) for old in schema.by_old_name}
    read |= {schema.config_env, *OTHER_ENV}
    return sorted(
        name
        for name in env
        if name.startswith(prefix)
        and name not in read
        and not any(name.startswith(p) for p in others)
        and not _SERVICE_ENV.fullmatch(name)
    )


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
    warn: Warn = stderr_warning,
) -> T:
    """Defaults < ``config_file`` (else the schema's config variable) < ``env`` (default
    ``os.environ``) < ``flags``; :class:`ConfigError` naming the layer and key of a bad value.
    Former names and unknown variables are reported through ``warn``, one line each."""
    environ = os.environ if env is None else env
    path = config_file or environ.get(schema.config_env) or None
    layers: Layer = {}
    if path:
        layers.update(file_layer(schema, Path(path), warn))
    layers.update(env_layer(schema, environ, warn))
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
