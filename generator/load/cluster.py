"""The cluster-reading edge that every --kubeconfig goes through (render, plan, fit, capacity,
doctor): the API client opened from a kubeconfig, and the one error type for a cluster that
cannot be read, with the same words whichever command reads it. Read-only; the client and its
errors are imported only here and in what runs inside :func:`reading`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


class LiveError(Exception):
    """The cluster cannot be read; the message says which cluster and why."""


class KubeconfigError(LiveError):
    """The kubeconfig itself cannot be used (a usage error wherever it is reported)."""


def shown(kubeconfig: Path | None) -> str:
    """How a kubeconfig is named in messages (None: the client's own search)."""
    return str(kubeconfig) if kubeconfig is not None else "the default kubeconfig"


@contextmanager
def reading(kubeconfig: Path | None) -> Iterator[ApiClient]:
    """An API client of ``kubeconfig`` (None: in-cluster, else $KUBECONFIG or ~/.kube/config),
    closed after the block; the client's and the network's errors raised in the block come out
    as :class:`LiveError` (a :class:`LiveError` raised in it passes unchanged)."""
    # The API client costs a second of start-up: imported only when a cluster is read.
    from kubernetes.client.exceptions import ApiException  # noqa: PLC0415
    from kubernetes.config.config_exception import ConfigException  # noqa: PLC0415
    from urllib3.exceptions import HTTPError  # noqa: PLC0415

    from ..gate.kube import load_client  # noqa: PLC0415

    name = shown(kubeconfig)
    try:
        api = load_client(str(kubeconfig) if kubeconfig is not None else None)
    except (ConfigException, OSError) as e:
        raise KubeconfigError(f"cannot use {name}: {e}") from e
    try:
        with api:
            yield api
    except ApiException as e:
        reason = f"{e.status} {e.reason}" if e.status else str(e.reason)
        raise LiveError(f"cannot read the cluster of {name}: {reason}") from e
    except (HTTPError, OSError) as e:
        raise LiveError(f"cannot reach the cluster of {name}: {e}") from e
    except ConfigException as e:  # a setting the client reads only on its first request
        raise KubeconfigError(f"cannot use {name}: {e}") from e
