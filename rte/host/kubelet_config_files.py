"""Reading kubelet configuration files: the main file and its ``--config-dir`` drop-ins.

The document's shape (KubeletConfiguration, ``/configz`` body, OpenShift ``KubeletConfig``) and
the meaning of each field are :mod:`rte.host.kubelet_config`'s business; this module reads,
decodes (JSON or YAML) and merges, and names the file in every error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rte.errors import InputError
from rte.host.kubelet_config import (
    KubeletConfig,
    check_kind,
    default_eviction_hard,
    parse_kubelet_config,
    unwrap_document,
)
from rte.yamlfile import load_yaml


def merge_drop_in(base: Mapping[str, Any], drop_in: Mapping[str, Any]) -> dict[str, Any]:
    """Merge a drop-in over a config the way the kubelet does (RFC 7386 merge patch).

    Mappings merge key by key, anything else (lists included) is replaced, and ``null`` deletes.
    """
    merged = dict(base)
    for key, value in drop_in.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge_drop_in(merged[key], value)
        else:
            merged[key] = value
    return merged


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        detail = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise InputError(str(path), f"cannot read: {detail}") from e


def _decode(text: str, source: str) -> object:
    if not text.strip():
        raise InputError(source, "empty file")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass  # not JSON (or too deep for it); YAML is the other accepted form and says why
    return load_yaml(text, source)


def load_kubelet_config(path: Path, config_dir: Path | None = None) -> KubeletConfig:
    """Read a kubelet config file (any supported shape) and optional ``--config-dir`` drop-ins.

    Drop-ins are the ``*.conf`` files directly in ``config_dir``, merged in lexical order over
    the main file. As in the kubelet, the main file is defaulted first, so a drop-in that sets
    one eviction threshold overrides that one and keeps the others.
    """
    data = _decode(_read(path), str(path))
    if config_dir is None:
        return parse_kubelet_config(data, str(path))
    config, prefix = unwrap_document(data, str(path))
    check_kind(config, str(path), prefix)
    merged: dict[str, Any] = dict(config)
    if merged.get("evictionHard") is None:
        merged["evictionHard"] = default_eviction_hard()
    try:
        drop_ins = sorted(p for p in config_dir.iterdir() if p.suffix == ".conf" and p.is_file())
    except OSError as e:
        raise InputError(str(config_dir), f"cannot list drop-in directory: {e.strerror or e}") from e
    sources = [str(path)]
    for drop_in_path in drop_ins:
        text = _read(drop_in_path)
        if not text.strip():
            continue  # the kubelet skips empty drop-ins
        drop_in = _decode(text, str(drop_in_path))
        if not isinstance(drop_in, Mapping):
            raise InputError(str(drop_in_path), "expected a KubeletConfiguration mapping")
        check_kind(drop_in, str(drop_in_path), "")
        merged = merge_drop_in(merged, drop_in)
        sources.append(str(drop_in_path))
    return parse_kubelet_config(merged, " + ".join(sources))
