"""TLS for the daemons' HTTP server: a certificate, its key, and a required client CA, reloaded.

:class:`ServerTls` builds the server's :class:`ssl.SSLContext` from three PEM files and keeps it
current: at most once per ``check_interval`` it compares the files' identity (inode, size,
modification time; through symlinks) with what it loaded, and builds a new context when they
changed. cert-manager renews a certificate by rewriting its Secret, and the kubelet swaps the
Secret volume's files at once through a symlink (``..data``), so a pod picks up a renewed
certificate without a restart. New connections get the new context; open ones keep theirs. A
rewrite that cannot be loaded (a certificate and a key from different generations, caught between
two writes) keeps the last good context, logs one line, and is tried again at the next check.

Client certificates are required (``CERT_REQUIRED``): a client that presents none, or one not
signed by the client CA, fails the handshake and never reaches a handler; the failures are
logged at most one line per :data:`FAILURE_LOG_INTERVAL` (:class:`FailureLog`), since anyone who
reaches the port can make them at connection rate. TLS 1.2 is the oldest version accepted, with
AEAD suites only (:data:`TLS12_CIPHERS`; TLS 1.3 has no other). ALPN offers only ``http/1.1``:
Go clients (kube-scheduler's extender client is Go's ``net/http`` with HTTP/2 enabled,
kubernetes/kubernetes ``pkg/scheduler/extender.go`` makeTransport) then speak HTTP/1.1, the only
protocol the server has.

:func:`handshake` advances a non-blocking server-side handshake, for the server's dispatcher.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rte.errors import ConfigError

log = logging.getLogger(__name__)

CHECK_INTERVAL = 1.0
"""Seconds between two looks at the files: three stat() calls, cheap against a handshake."""

TLS12_CIPHERS = ":".join(
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "ECDHE-RSA-CHACHA20-POLY1305",
    )
)
"""The TLS 1.2 suites offered: forward-secret AEAD ones only (Mozilla's "intermediate" server
configuration without its DHE suites, which need DH parameters Python never loads). OpenSSL's
default list also offers CBC suites (``ECDHE-RSA-AES128-SHA`` and the like), which issue #26
(item 10) asks to drop. Go's client, kube-scheduler's, offers all of these first
(``crypto/tls`` cipher_suites.go, defaultCipherSuites)."""

FAILURE_LOG_INTERVAL = 60.0
"""Seconds: at most one log line about failed handshakes per interval (:class:`FailureLog`)."""


@dataclass(frozen=True)
class TlsFiles:
    """Where the server's certificate (chain), private key and client CA bundle are (PEM)."""

    cert: Path
    key: Path
    client_ca: Path


def _signature(files: TlsFiles) -> tuple[tuple[int, int, int], ...] | None:
    try:
        stats = [os.stat(path) for path in (files.cert, files.key, files.client_ca)]
    except OSError:
        return None
    return tuple((s.st_ino, s.st_size, s.st_mtime_ns) for s in stats)


def server_context(files: TlsFiles) -> ssl.SSLContext:
    """A server context over ``files`` requiring client certificates; one-line errors per file."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(TLS12_CIPHERS)  # TLS 1.2's; TLS 1.3's suites are all AEAD
    context.set_alpn_protocols(["http/1.1"])
    try:
        context.load_cert_chain(files.cert, files.key)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(
            f"{files.cert} and {files.key}", f"not a usable certificate and private key: {_reason(e)}"
        ) from e
    try:
        context.load_verify_locations(cafile=files.client_ca)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(str(files.client_ca), f"not a usable client CA bundle: {_reason(e)}") from e
    if not context.get_ca_certs():
        raise ConfigError(str(files.client_ca), "holds no CA certificate")
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def _reason(e: BaseException) -> str:
    if isinstance(e, ssl.SSLError) and e.reason:
        return str(e.reason)
    return e.strerror if isinstance(e, OSError) and e.strerror else str(e)


class ServerTls:
    """The current server context for ``files``; see the module docstring."""

    def __init__(
        self,
        files: TlsFiles,
        *,
        check_interval: float = CHECK_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.files = files
        self.check_interval = check_interval
        self._clock = clock
        self._lock = threading.Lock()
        signature = _signature(files)
        self._context = server_context(files)  # at start, a bad file is a configuration error
        self._loaded = signature
        self._checked = clock()
        self.reloads = 0

    def context(self) -> ssl.SSLContext:
        """The context for a new connection, reloaded first when the files changed."""
        with self._lock:
            now = self._clock()
            if now - self._checked < self.check_interval:
                return self._context
            self._checked = now
            signature = _signature(self.files)
            if signature is None or signature == self._loaded:
                return self._context
            try:
                self._context = server_context(self.files)
            except ConfigError as e:
                log.warning("TLS files changed but cannot be loaded (keeping the previous ones): %s", e)
                return self._context
            self._loaded = signature
            self.reloads += 1
            log.info("TLS certificate reloaded from %s", self.files.cert)
            return self._context


class FailureLog:
    """Failed handshakes, logged at most one INFO line per ``interval``.

    The first failure is logged at once (peer and reason); those that follow within the
    interval are only counted, and the next line logged says how many there were. A client
    without a certificate that reconnects in a loop costs one line a minute instead of one
    per connection (issue #26, item 10); :attr:`total` counts them all.
    """

    def __init__(
        self, interval: float = FAILURE_LOG_INTERVAL, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._logged_at: float | None = None
        self._unlogged = 0
        self.total = 0

    def failed(self, peer: str, reason: str) -> None:
        with self._lock:
            self.total += 1
            now = self._clock()
            if self._logged_at is not None and now - self._logged_at < self.interval:
                self._unlogged += 1
                return
            unlogged, self._unlogged, self._logged_at = self._unlogged, 0, now
        if unlogged:
            log.info(
                "TLS handshake with %s failed: %s (and %d more failed handshakes since the last line)",
                peer,
                reason,
                unlogged,
            )
        else:
            log.info("TLS handshake with %s failed: %s", peer, reason)


def handshake(sock: ssl.SSLSocket, failures: FailureLog) -> bool | None:
    """One step of a non-blocking server handshake: True done, False wants input, None failed.

    A failure (no client certificate, one from another CA, not TLS at all) goes to ``failures``
    (one line at most per interval). A handshake that wants to write is retried when the peer
    sends again; the messages a server writes fit in an empty socket buffer, so it does not
    happen in practice.
    """
    try:
        sock.do_handshake()
    except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
        return False
    except (ssl.SSLError, OSError) as e:
        try:
            host, port = sock.getpeername()[:2]
            peer = f"{host}:{port}"
        except OSError:
            peer = "a client"
        failures.failed(peer, _reason(e))
        return None
    return True


def pending(sock: object) -> bool:
    """Whether ``sock`` holds decrypted bytes not read yet (a selector cannot see those)."""
    return isinstance(sock, ssl.SSLSocket) and sock.pending() > 0
