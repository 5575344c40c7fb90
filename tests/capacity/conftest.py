"""Fixtures shared by the capacity fetcher tests."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from moto.server import ThreadedMotoServer


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()
