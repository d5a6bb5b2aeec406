"""An answer's head and body go out gathered (``sendmsg``), byte for byte as joined, however
little the socket takes at a time (TLS, which has no ``sendmsg``: tests/runtime/test_tls.py)."""

from __future__ import annotations

import socket
import threading

import pytest

from rte.runtime.httpwire import send_response


def _received(head: bytes, body: bytes, *, sndbuf: int) -> bytes:
    sender, receiver = socket.socketpair()
    sender.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
    sender.settimeout(10)
    got = bytearray()

    def read() -> None:
        while data := receiver.recv(4096):  # slowly: the sender's buffer fills, sends are partial
            got.extend(data)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        send_response(sender, head, body)
    finally:
        sender.close()
        reader.join(10)
        receiver.close()
    return bytes(got)


@pytest.mark.parametrize("size", [0, 1, 70_000, 3_000_000])
def test_head_and_body_arrive_as_one_joined_message(size: int) -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size
    body = bytes(i % 251 for i in range(size))
    assert _received(head, body, sndbuf=4096) == head + body
