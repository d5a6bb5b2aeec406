"""``load_static_kubeconfig``: the client configuration ``kube_config.load_kube_config`` makes of
the same kubeconfig (the installed client's), for static credentials; everything else declined."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client import Configuration
from kubernetes.config.kube_config import load_kube_config

from rte.runtime.kubeconfig import load_static_kubeconfig

CA = b"-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"
CERT = b"-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n"
KEY = b"-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n"


def _b64(data: bytes) -> str:
    return base64.standard_b64encode(data).decode()


def _kubeconfig(cluster: dict[str, Any], user: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "c", "cluster": cluster},
            {"name": "other", "cluster": {"server": "http://o:1"}},
        ],
        "users": [{"name": "u", "user": user}, {"name": "nobody", "user": {}}],
        "contexts": [
            {"name": "ctx", "context": {"cluster": "c", "user": "u"}},
            {"name": "other", "context": {"cluster": "other", "user": "nobody"}},
        ],
        "current-context": "ctx",
        **extra,
    }


STATIC = {
    "token over http": _kubeconfig({"server": "http://127.0.0.1:8080/"}, {"token": "abc.def"}),
    "token file, relative": _kubeconfig({"server": "http://h:1"}, {"tokenFile": "token"}),
    "an empty token wins over the file": _kubeconfig(
        {"server": "http://h:1"}, {"token": "", "tokenFile": "token"}
    ),
    "basic auth": _kubeconfig({"server": "http://h:1"}, {"username": "ad min", "password": "p:w"}),
    "https, everything as data": _kubeconfig(
        {
            "server": "https://10.0.0.1:6443",
            "certificate-authority-data": _b64(CA),
            "tls-server-name": "kubernetes",
            "proxy-url": "http://proxy:3128",
        },
        {"client-certificate-data": _b64(CERT), "client-key-data": _b64(KEY)},
    ),
    "https, files, insecure": _kubeconfig(
        {"server": "https://h:6443", "certificate-authority": "ca.crt", "insecure-skip-tls-verify": True},
        {"client-certificate": "client.crt", "client-key": "client.key", "token": "t"},
    ),
    "a token with an exec plugin beside it": _kubeconfig(
        {"server": "http://h:1"}, {"token": "t", "exec": {"command": "false", "apiVersion": "x"}}
    ),
    "no user": {**_kubeconfig({"server": "http://h:1"}, {}), "current-context": "other"},
}


def _fields(cfg: Any) -> dict[str, Any]:
    def content(name: str | None) -> bytes | None:
        return Path(name).read_bytes() if name else None

    return {
        "host": cfg.host,
        "authorization": cfg.get_api_key_with_prefix("BearerToken"),
        "verify_ssl": cfg.verify_ssl,
        "tls_server_name": cfg.tls_server_name,
        "proxy": cfg.proxy,
        "ca": content(cfg.ssl_ca_cert),
        "cert": content(cfg.cert_file),
        "key": content(cfg.key_file),
    }


def _write(tmp_path: Path, doc: dict[str, Any]) -> str:
    (tmp_path / "token").write_text("from-file")
    (tmp_path / "ca.crt").write_bytes(CA)
    (tmp_path / "client.crt").write_bytes(CERT)
    (tmp_path / "client.key").write_bytes(KEY)
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.mark.parametrize("name", list(STATIC))
@pytest.mark.parametrize("context", [None, "other"])
def test_static_credentials_configure_the_client_as_kube_config_does(
    tmp_path: Path, name: str, context: str | None
) -> None:
    path = _write(tmp_path, STATIC[name])
    ours, theirs = Configuration(), Configuration()
    assert load_static_kubeconfig(path, context, ours)
    load_kube_config(config_file=path, context=context, client_configuration=theirs)  # type: ignore[no-untyped-call]
    assert _fields(ours) == _fields(theirs)


DECLINED = {
    "an auth provider": _kubeconfig(
        {"server": "http://h:1"}, {"auth-provider": {"name": "oidc", "config": {}}}
    ),
    "an exec plugin": _kubeconfig({"server": "http://h:1"}, {"exec": {"command": "x", "apiVersion": "y"}}),
    "no such context": {**_kubeconfig({"server": "http://h:1"}, {}), "current-context": "nowhere"},
    "no server": _kubeconfig({}, {"token": "t"}),
    "a missing CA file": _kubeconfig({"server": "https://h:1", "certificate-authority": "none.crt"}, {}),
    "bad base64 (its padding)": _kubeconfig(
        {"server": "https://h:1", "certificate-authority-data": "abc"}, {}
    ),
    "not a mapping": ["a", "list"],
}


@pytest.mark.parametrize("name", list(DECLINED))
def test_what_is_not_static_or_not_readable_is_left_to_kube_config(tmp_path: Path, name: str) -> None:
    path = _write(tmp_path, DECLINED[name])  # type: ignore[arg-type]
    cfg = Configuration()
    before = _fields(cfg)
    assert not load_static_kubeconfig(path, None, cfg)
    assert _fields(cfg) == before


def test_a_missing_file_is_declined(tmp_path: Path) -> None:
    assert not load_static_kubeconfig(str(tmp_path / "none"), None, Configuration())
