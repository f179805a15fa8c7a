"""Real HTTPS endpoints on 127.0.0.1 for `tasgen fetch` tests, with a CA made here.

The servers record every connection and request they receive, so tests can prove what a
credential reached (and what it did not)."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

ONE_DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Pair:
    cert_pem: bytes
    key_pem: bytes

    def files(self, folder: Path, name: str) -> tuple[Path, Path]:
        cert, key = folder / f"{name}.crt", folder / f"{name}.key"
        cert.write_bytes(self.cert_pem)
        key.write_bytes(self.key_pem)
        return cert, key


class Authority:
    """A CA of the test's own; it signs server certificates for 127.0.0.1 and client ones."""

    def __init__(self, name: str) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - ONE_DAY)
            .not_valid_after(now + ONE_DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )

    @property
    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, common_name: str, *, server: bool) -> Pair:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        usage = x509.ExtendedKeyUsageOID.SERVER_AUTH if server else x509.ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - ONE_DAY)
            .not_valid_after(now + ONE_DAY)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False
            )
        )
        if server:
            names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return Pair(cert.public_bytes(serialization.Encoding.PEM), key_pem)


@dataclass
class Seen:
    """What an endpoint received."""

    connections: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)  # path, headers, peer
    raw: bytearray = field(default_factory=bytearray)  # bytes before any TLS (raw servers)


#: (handler) -> (status, headers, body); a body may be an iterator of chunks to send slowly
Respond = Callable[[BaseHTTPRequestHandler], tuple[int, dict[str, str], bytes | Iterator[bytes]]]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
        self.server.seen.requests.append({"path": self.path, "headers": dict(self.headers), "peer": peer})
        status, headers, body = self.server.respond(self)
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        if isinstance(body, bytes) and "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        chunks = [body] if isinstance(body, bytes) else body
        try:
            for chunk in chunks:
                self.wfile.write(chunk)
                self.wfile.flush()
        except OSError:
            pass  # the client gave up (a size cap or a timeout): what the test wants

    def log_message(self, format: str, *args: Any) -> None:
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, tls: ssl.SSLContext | None, respond: Respond) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.tls, self.respond, self.seen = tls, respond, Seen()

    def get_request(self) -> tuple[Any, Any]:
        sock, address = super().get_request()
        self.seen.connections += 1
        return sock, address

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(5)
        with self.tls.wrap_socket(request, server_side=True) as wrapped:  # handshake in this thread
            super().finish_request(wrapped, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None  # failed handshakes are what several tests provoke


class Endpoint:
    """An HTTP(S) server on 127.0.0.1 and a free port, in a thread."""

    def __init__(self, respond: Respond, tls: ssl.SSLContext | None) -> None:
        self.server = _Server(tls, respond)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def seen(self) -> Seen:
        return self.server.seen

    def url(self, path: str = "/v1/topology/l40s", scheme: str = "https") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def server_tls(ca: Authority, *, client_ca: Authority | None = None, folder: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*ca.issue("127.0.0.1", server=True).files(folder, "server"))
    if client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cadata=client_ca.pem.decode())
    return context


class RawListener:
    """A TCP listener that answers nothing over TLS: it records the bytes it receives and
    replies in plain HTTP (a server without TLS behind an https:// URL)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.seen = Seen()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve)
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.seen.connections += 1
            with conn:
                conn.settimeout(1)
                try:
                    self.seen.raw += conn.recv(65536)
                    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                except OSError:
                    pass

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(5)
        self.sock.close()


def trickle(data: bytes, pause: float) -> Iterator[bytes]:
    """The body one byte at a time: each read gets something, the whole takes long."""
    for byte in data:
        time.sleep(pause)
        yield bytes([byte])
