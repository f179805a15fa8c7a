"""Fixtures of the fetch tests: a CA, endpoints on 127.0.0.1, a copy of the example
inventory whose webhook source points at them, and the Secret as mounted files."""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.fetch.endpoints import Authority, Endpoint, RawListener, Respond, server_tls

TOKEN = "s3cr3t-token-4f9a1c"
SOURCE_FILE = "sources/l40s-inventory.yaml"
SNAPSHOT_FILE = "snapshots/l40s-inventory.json"


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every connection fetch opens in these tests goes to 127.0.0.1: any other address fails
    the test before a packet is sent (http.client connects through create_connection)."""
    connect = socket.create_connection

    def loopback(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
        assert address[0] in ("127.0.0.1", "localhost"), f"a test tried to reach {address[0]}"
        return connect(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", loopback)


@pytest.fixture(scope="session")
def ca() -> Authority:
    return Authority("tasgen test CA")


@pytest.fixture
def serve(ca: Authority, tmp_path: Path) -> Iterator[Callable[..., Endpoint]]:
    """Start an endpoint: serve(respond, client_ca=None, tls=True)."""
    started: list[Endpoint | RawListener] = []

    def start(respond: Respond, *, client_ca: Authority | None = None, tls: bool = True) -> Endpoint:
        context = server_tls(ca, client_ca=client_ca, folder=tmp_path) if tls else None
        endpoint = Endpoint(respond, context)
        started.append(endpoint)
        return endpoint

    yield start
    for endpoint in started:
        endpoint.close()


@pytest.fixture
def raw_listener() -> Iterator[RawListener]:
    listener = RawListener()
    yield listener
    listener.close()


@pytest.fixture
def inventory(tmp_path: Path) -> Path:
    folder = tmp_path / "inventories"
    shutil.copytree(REPO / "inventories", folder)
    return folder


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    folder = tmp_path / "secrets"
    token = folder / "gpu-topology" / "inventory-token" / "token"
    token.parent.mkdir(parents=True)
    token.write_text(TOKEN + "\n")
    return folder


def point_source(inventory: Path, url: str, ca: Authority | None, **webhook: Any) -> None:
    """Rewrite the example's webhook source to poll ``url`` (never the example's host)."""
    path = inventory / SOURCE_FILE
    body = yaml.safe_load(path.read_text())
    hook = body["spec"]["webhook"]
    hook["url"] = url
    if ca is not None:
        hook["caBundle"] = ca.pem.decode()
    hook.update(webhook)
    path.write_text(yaml.safe_dump(body, sort_keys=False))


def snapshot(revision: str = "inv-9000", **more_nodes: dict[str, str]) -> dict[str, Any]:
    """The example's l40s snapshot with a new revision (and any extra nodes)."""
    committed = json.loads((REPO / "inventories" / SNAPSHOT_FILE).read_text())
    committed["revision"] = revision
    committed["nodes"].update(more_nodes)
    return dict(committed)
