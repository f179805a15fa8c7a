"""The credential a webhook source names, read from a Secret: mounted files (``--secrets-dir``,
how a Secret mounts and how CI passes secrets) or the cluster's API.

A credential's value is never part of a message, a repr or a log line. A client key has to
reach OpenSSL as a file (the ssl module loads key pairs from paths only): it is written to a
0600 file in a fresh 0700 folder (in /dev/shm, memory, when there is one) and removed as soon
as OpenSSL has read it, in a ``finally``.
"""

from __future__ import annotations

import base64
import binascii
import os
import shutil
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

TOKEN_KEY = "token"
_MEMORY = Path("/dev/shm")


class CredentialError(Exception):
    """A credential could not be read or used; the message never holds its value."""


class Credential(Protocol):
    def headers(self) -> dict[str, str]: ...

    def prepare(self, context: ssl.SSLContext) -> None: ...


@dataclass(frozen=True)
class BearerToken:
    token: str = field(repr=False)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def prepare(self, context: ssl.SSLContext) -> None:
        return None


@dataclass(frozen=True)
class ClientCertificate:
    cert_pem: bytes = field(repr=False)
    key_pem: bytes = field(repr=False)

    def headers(self) -> dict[str, str]:
        return {}

    def prepare(self, context: ssl.SSLContext) -> None:
        try:
            folder = Path(tempfile.mkdtemp(prefix="tasgen-", dir=_MEMORY if _MEMORY.is_dir() else None))
        except OSError as e:
            raise CredentialError(f"no private folder for the client key: {e.strerror}") from None
        try:
            pair = folder / "client.pem"
            descriptor = os.open(pair, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as stream:
                stream.write(self.key_pem + b"\n" + self.cert_pem)
            context.load_cert_chain(pair)
        except (ssl.SSLError, ValueError):
            raise CredentialError("tls.crt and tls.key are not a matching PEM certificate and key") from None
        except OSError as e:
            raise CredentialError(f"cannot hand the client key to OpenSSL: {e.strerror}") from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)


class SecretReader(Protocol):
    def read(self, namespace: str, name: str, key: str) -> bytes: ...


@dataclass(frozen=True)
class SecretsDir:
    """``DIR/<namespace>/<name>/<key>``: one file per key, as a Secret volume mounts."""

    root: Path

    def read(self, namespace: str, name: str, key: str) -> bytes:
        if any(
            part in ("", ".", "..") or "/" in part or part.startswith("..") for part in (namespace, name, key)
        ):
            # Kubernetes refuses such names; here they would lead outside DIR.
            raise CredentialError(f"{namespace}/{name} key {key!r} cannot name a Secret's file")
        path = self.root / namespace / name / key
        try:
            return path.read_bytes()
        except OSError as e:
            raise CredentialError(f"cannot read {path}: {e.strerror or type(e).__name__}") from None


@dataclass
class ClusterSecrets:
    """Secrets read through the API server of a kubeconfig (the current context)."""

    kubeconfig: Path | None
    _api: Any = field(default=None, repr=False)

    def read(self, namespace: str, name: str, key: str) -> bytes:
        secret = self._read_secret(namespace, name)
        data = getattr(secret, "data", None) or {}
        if key not in data:
            raise CredentialError(f"Secret {namespace}/{name} has no key {key!r}")
        try:
            return base64.b64decode(data[key], validate=True)
        except (binascii.Error, ValueError):
            raise CredentialError(f"Secret {namespace}/{name} key {key!r} is not base64") from None

    def _read_secret(self, namespace: str, name: str) -> Any:
        from kubernetes.client.exceptions import ApiException  # noqa: PLC0415 - a second of start-up
        from urllib3.exceptions import HTTPError  # noqa: PLC0415

        try:
            return self._client().read_namespaced_secret(name, namespace)
        except ApiException as e:
            # The exception's text holds the API's whole answer; only its status is shown.
            raise CredentialError(f"cannot read Secret {namespace}/{name}: {e.status} {e.reason}") from None
        except (OSError, HTTPError) as e:
            message = f"cannot reach the cluster for Secret {namespace}/{name} ({type(e).__name__})"
            raise CredentialError(message) from None

    def _client(self) -> Any:
        if self._api is None:
            from kubernetes import client, config  # noqa: PLC0415

            try:
                path = str(self.kubeconfig) if self.kubeconfig else None
                api = config.new_client_from_config(config_file=path)  # type: ignore[no-untyped-call]
            except (config.ConfigException, OSError, TypeError) as e:
                raise CredentialError(f"cannot use the kubeconfig: {e}") from None
            except ImportError as e:  # a socks5:// proxy-url: urllib3 imports PySocks only then
                needs = f"its proxy-url needs the module {e.name!r}, which is not installed"
                raise CredentialError(f"cannot use the kubeconfig: {needs} (pip install pysocks)") from None
            self._api = client.CoreV1Api(api)
        return self._api


def bearer_token(secrets: SecretReader, ref: dict[str, str]) -> BearerToken:
    key = ref.get("key", TOKEN_KEY)
    raw = secrets.read(ref["namespace"], ref["name"], key)
    # A token file written with `echo` ends with a newline; that is not part of the token.
    token = raw.decode("ascii", errors="replace").rstrip("\r\n")
    if not token or not all("\x21" <= c <= "\x7e" for c in token):
        where = f"Secret {ref['namespace']}/{ref['name']} key {key!r}"
        raise CredentialError(f"{where} is empty or holds characters an HTTP header cannot carry")
    return BearerToken(token)


def client_certificate(secrets: SecretReader, ref: dict[str, str]) -> ClientCertificate:
    """A kubernetes.io/tls Secret: tls.crt and tls.key."""
    cert = secrets.read(ref["namespace"], ref["name"], "tls.crt")
    key = secrets.read(ref["namespace"], ref["name"], "tls.key")
    return ClientCertificate(cert, key)


def of_webhook(secrets: SecretReader, webhook: dict[str, Any]) -> Credential:
    if "bearerTokenSecretRef" in webhook:
        return bearer_token(secrets, webhook["bearerTokenSecretRef"])
    return client_certificate(secrets, webhook["clientCertificateSecretRef"])
