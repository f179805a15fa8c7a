"""The end-to-end harness's port picker: components started together never share a port."""

from __future__ import annotations

import socket

from tests.e2e.flux import free_port


def test_free_port_never_hands_out_a_port_twice() -> None:
    # 500 picks from the kernel's ~14k even ephemeral ports repeat one almost surely
    # (birthday bound ~9 expected pairs) unless the picker remembers what it gave.
    ports = [free_port() for _ in range(500)]
    assert len(set(ports)) == len(ports)


def test_free_port_is_bindable_on_loopback() -> None:
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        assert s.getsockname() == ("127.0.0.1", port)
