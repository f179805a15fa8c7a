"""One HTTPS GET, with the standard library only: redirects are never followed (a library
that follows them by default could forward the credential), TLS is always verified, and
time and size are bounded while the answer is read.

Every failure is a :class:`FetchError` whose message is written here, never copied from
a lower layer that might echo a header: the credential must not appear in any message.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from .credentials import Credential

CHUNK = 64 * 1024
USER_AGENT = "tasgen-fetch"


class FetchError(Exception):
    """A source could not be polled; the message is safe to print."""


@dataclass(frozen=True)
class Request:
    url: str
    credential: Credential
    tls: ssl.SSLContext
    timeout: float  # seconds for connecting, and for the whole answer to arrive
    max_bytes: int
    etag: str | None = None  # sent as If-None-Match


@dataclass(frozen=True)
class Answer:
    """200 with a body, or 304 (``body`` is None: what is committed is current)."""

    body: bytes | None
    etag: str | None


def tls_context(ca_pem: str | None) -> ssl.SSLContext:
    """Verification against the source's CA bundle, else the system trust store."""
    try:
        context = ssl.create_default_context(cadata=ca_pem) if ca_pem else ssl.create_default_context()
    except (ssl.SSLError, ValueError) as e:
        raise FetchError(f"caBundle is not a usable PEM certificate bundle ({type(e).__name__})") from None
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def get(request: Request) -> Answer:
    host, port, target = _target(request.url)
    deadline = time.monotonic() + request.timeout
    request.credential.prepare(request.tls)
    connection = http.client.HTTPSConnection(host, port, timeout=request.timeout, context=request.tls)
    try:
        connection.request("GET", target, headers=_headers(request))
        sock = connection.sock  # the connection lets go of it once the answer is read
        if sock is not None:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
        response = connection.getresponse()
        return _answer(response, request, _Clock(sock, deadline, request.timeout))
    except FetchError:
        raise
    except ssl.SSLCertVerificationError as e:
        raise FetchError(f"TLS verification of {host} failed: {e.verify_message}") from None
    except ssl.SSLError as e:
        raise FetchError(f"TLS handshake with {host}:{port} failed ({e.reason or 'SSL error'})") from None
    except TimeoutError:
        raise FetchError(f"no answer from {host}:{port} within {request.timeout:g} s") from None
    except (OSError, http.client.HTTPException) as e:
        raise FetchError(f"cannot reach {host}:{port}: {_reason(e)}") from None
    except ValueError:  # its text would quote the offending header, the credential perhaps
        raise FetchError("the request cannot be made: a control character in the URL or a header") from None
    finally:
        connection.close()


def _target(url: str) -> tuple[str, int, str]:
    parts = urlsplit(url)
    if parts.scheme != "https":
        raise FetchError("only https:// URLs are polled")
    if parts.username is not None or parts.password is not None:
        raise FetchError("the URL carries user information; credentials come from the Secret only")
    if not parts.hostname:
        raise FetchError("the URL has no host")
    try:
        port = parts.port or 443
    except ValueError:
        raise FetchError("the URL's port is not a number between 0 and 65535") from None
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.hostname, port, target


def _headers(request: Request) -> dict[str, str]:
    headers = {
        "Accept": "application/json, application/yaml;q=0.9",
        "User-Agent": USER_AGENT,
        **request.credential.headers(),
    }
    if request.etag:
        headers["If-None-Match"] = request.etag
    return headers


@dataclass(frozen=True)
class _Clock:
    """The deadline of the whole answer: each read may only wait for what is left of it."""

    sock: socket.socket | None
    deadline: float
    timeout: float

    def read(self, response: http.client.HTTPResponse) -> bytes:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise FetchError(f"the answer did not arrive within {self.timeout:g} s")
        if self.sock is not None:
            self.sock.settimeout(remaining)
        try:
            return response.read1(CHUNK)
        except TimeoutError:
            raise FetchError(f"the answer did not arrive within {self.timeout:g} s") from None
        except http.client.IncompleteRead:  # a chunked answer whose connection closed early
            raise FetchError("the answer was cut short: its connection closed early") from None


def _answer(response: http.client.HTTPResponse, request: Request, clock: _Clock) -> Answer:
    status = response.status
    etag = response.getheader("ETag")
    if status == 304 and request.etag is None:  # nothing was asked to be confirmed
        raise FetchError("the endpoint answered 304 (not modified) to a request without If-None-Match")
    if status == 304:
        return Answer(None, etag or request.etag)
    if 300 <= status < 400:
        raise FetchError(
            f"the endpoint answered {status} (a redirect); redirects are refused so that the "
            "credential goes nowhere else: point spec.webhook.url at the final address"
        )
    if status != 200:
        # The body is never shown: an endpoint may echo the request, credential included.
        raise FetchError(f"the endpoint answered {status} {_printable(response.reason)}")
    return Answer(_body(response, request, clock), etag)


def _body(response: http.client.HTTPResponse, request: Request, clock: _Clock) -> bytes:
    declared = response.getheader("Content-Length")
    if declared and declared.isdigit() and int(declared) > request.max_bytes:
        raise FetchError(f"the answer is {int(declared)} bytes, over the limit of {request.max_bytes}")
    chunks: list[bytes] = []
    size = 0
    while chunk := clock.read(response):
        size += len(chunk)
        if size > request.max_bytes:
            raise FetchError(f"the answer is over the limit of {request.max_bytes} bytes")
        chunks.append(chunk)
    if response.length:  # http.client's read1 ends quietly when the peer closes early
        raise FetchError(f"the answer was cut short: {size} of its {declared} bytes arrived")
    return b"".join(chunks)


def _reason(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return type(error).__name__


def _printable(text: str) -> str:
    return "".join(c for c in text[:100] if c.isprintable())
