"""The body reader on its own, over a socket pair: exact bytes in any number of pieces, nothing
read past the body (a pipelined request stays for the next read), and a peer that stops short."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from rte.runtime import httpwire
from rte.runtime.httpwire import BodyReader, ClientGone


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, theirs = socket.socketpair()
    yield ours, theirs
    ours.close()
    theirs.close()


def _send_in_pieces(sock: socket.socket, data: bytes, size: int) -> threading.Thread:
    def send() -> None:
        for i in range(0, len(data), size):
            sock.sendall(data[i : i + size])

    thread = threading.Thread(target=send)
    thread.start()
    return thread


@pytest.mark.parametrize("piece", [1, 7, 4096, 300_000])
def test_a_long_body_is_read_exactly_whatever_the_pieces(
    pair: tuple[socket.socket, socket.socket], piece: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(httpwire, "_PIECE", 1000)  # several receive buffers even for a small body
    ours, theirs = pair
    body = bytes(range(256)) * 40
    reader = BodyReader(ours, b"head-rest:" + body[:10], time.monotonic() + 10)
    assert reader.read(10) == b"head-rest:"
    sender = _send_in_pieces(theirs, body[10:] + b"NEXT", piece)
    assert reader.read(len(body)) == body
    sender.join()
    assert reader.leftover() == b""  # the next request's bytes were not taken
    assert ours.recv(4) == b"NEXT"


def test_a_peer_closing_mid_body_is_a_client_gone_saying_how_far_it_got(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, theirs = pair
    theirs.sendall(b"x" * 5)
    theirs.close()
    with pytest.raises(ClientGone, match=r"body of 10 bytes \(got 5\)"):
        BodyReader(ours, b"", time.monotonic() + 10).read(10)
