"""A kubeconfig with static credentials read without ``kubernetes.config.kube_config``.

``kube_config`` imports, whatever the file holds, the generated ``ApiClient`` (and with it
pydantic), ``requests``, ``requests_oauthlib``, ``oauthlib`` and ``google.auth``: 15 MiB of
resident memory for the agent, which needs none of it for a kubeconfig that names a server and a
token, a client certificate or a user and password (docs/performance.md, "Agent memory").
:func:`load_static_kubeconfig` sets a client ``Configuration`` from such a file as
``KubeConfigLoader.load_and_set`` does, and declines (changing nothing) whatever it does not
cover: an ``auth-provider``, an ``exec`` plugin without a token, a file it cannot read as a
kubeconfig. The caller then loads the file with ``kube_config`` as before, which also reports
the errors.

Followed: ``kubernetes/config/kube_config.py`` of the installed client (37.x):
``KubeConfigLoader.set_active_context``, ``_load_authentication`` (the order: auth-provider,
token or tokenFile, exec, username and password), ``_load_user_token``, ``_load_user_pass_token``,
``_load_cluster_info`` (CA, client certificate and key only for an ``https`` server; a ``-data``
field wins over its file and is written, base64-decoded, to a temporary file; a relative file
is relative to the kubeconfig's directory), ``_set_config``.
``tests/runtime/test_kubeconfig.py`` holds the resulting configurations equal to ``kube_config``'s.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_written: dict[bytes, str] = {}
"""Decoded ``-data`` contents already written, and their file (one file per content, as
``kube_config`` keeps them), removed at exit."""


def _remove_written() -> None:
    for name in _written.values():
        with contextlib.suppress(OSError):
            os.remove(name)
    _written.clear()


def _as_file(entry: Mapping[str, Any], key: str, base: Path) -> str | None:
    """The file holding ``entry``'s ``key``: ``key-data`` decoded into a temporary file, else the
    ``key`` path (relative to ``base``); None when neither is there."""
    if f"{key}-data" in entry:  # even empty: then the file is not looked at either
        if not entry[f"{key}-data"]:
            return None
        content = base64.standard_b64decode(str(entry[f"{key}-data"]))
        if content not in _written:
            if not _written:
                atexit.register(_remove_written)
            fd, name = tempfile.mkstemp()
            with os.fdopen(fd, "wb") as f:
                f.write(content)
            _written[content] = name
        return _written[content]
    if entry.get(key):
        return os.path.normpath(base / str(entry[key]))
    return None


def _named(items: Any, name: Any) -> Mapping[str, Any] | None:
    for item in items or ():
        if isinstance(item, Mapping) and item.get("name") == name:
            return item
    return None


def _authorization(user: Mapping[str, Any], base: Path) -> str | bool | None:
    """The ``authorization`` header of ``user``'s static credentials, None for none at all, or
    False when they are not static (an auth-provider or an exec plugin)."""
    if "auth-provider" in user:
        return False
    if "token" in user:  # even empty: then tokenFile is not read
        token = user["token"]
    elif "tokenFile" in user:
        token = (base / str(user["tokenFile"])).read_text()
    else:
        token = None
    if token:
        return f"Bearer {token}"
    if "exec" in user:
        return False
    if "username" in user and "password" in user:
        from urllib3.util import make_headers

        return str(make_headers(basic_auth=f"{user['username']}:{user['password']}")["authorization"])
    return None


def load_static_kubeconfig(path: str, context: str | None, configuration: Any) -> bool:
    """Set ``configuration`` from the kubeconfig at ``path`` (``context``, else its current
    context) and return True, when its credentials are static; otherwise change nothing and
    return False (``kube_config`` is to load it)."""
    import yaml

    base = Path(os.path.abspath(os.path.dirname(path)))
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        ctx = _named(doc["contexts"], context or doc["current-context"])
        if ctx is None:
            return False
        names = ctx["context"]
        cluster = _named(doc["clusters"], names["cluster"])
        if cluster is None or not cluster["cluster"].get("server"):
            return False
        cluster = cluster["cluster"]
        user_entry = _named(doc.get("users"), names.get("user")) if names.get("user") else None
        user: Mapping[str, Any] = (user_entry or {}).get("user") or {}
        authorization = _authorization(user, base)
        if authorization is False:
            return False
        host = str(cluster["server"]).rstrip("/")
        files: dict[str, str | None] = {}
        if host.startswith("https"):
            files["ssl_ca_cert"] = _as_file(cluster, "certificate-authority", base)
            files["cert_file"] = _as_file(user, "client-certificate", base)
            files["key_file"] = _as_file(user, "client-key", base)
    except (OSError, ValueError, TypeError, KeyError, AttributeError, binascii.Error, yaml.YAMLError):
        return False  # kube_config reads it again and says what is wrong
    if any(name is not None and not os.path.isfile(name) for name in files.values()):
        return False  # kube_config's "File does not exist" error
    if authorization is not None:
        configuration.api_key["BearerToken"] = authorization
    configuration.host = host
    for key, name in files.items():
        setattr(configuration, key, name)
    if "insecure-skip-tls-verify" in cluster:
        configuration.verify_ssl = not cluster["insecure-skip-tls-verify"]
    if "tls-server-name" in cluster:
        configuration.tls_server_name = cluster["tls-server-name"]
    if "proxy-url" in cluster:
        configuration.proxy = cluster["proxy-url"]
    return True
