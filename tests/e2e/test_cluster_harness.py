"""The harness itself: it starts every component, and stops them all on SIGTERM."""

from __future__ import annotations

import dataclasses
import signal
from pathlib import Path

import pytest

from tests.e2e import harness
from tests.e2e.fleet import Fleet

pytestmark = pytest.mark.cluster

COMPONENTS = {"etcd", "kube-apiserver", "kueue", "nfd-master"}


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _program(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode().rsplit("/", 1)[-1]


def test_sigterm_stops_every_component(cluster_build: harness.Build, tmp_path: Path, fleet: Fleet) -> None:
    cluster = harness.start(cluster_build, tmp_path, fleet.nfd_label_namespaces)
    try:
        pids = harness.descendants(cluster.process.pid)
        assert {_program(pid) for pid in pids} >= COMPONENTS
        cluster.process.send_signal(signal.SIGTERM)
        assert cluster.process.wait(timeout=harness.STOP_TIMEOUT_S) == 0, harness.tail(cluster.log)
        assert [pid for pid in pids if _alive(pid)] == []
        assert not cluster.kubeconfig.exists()
    finally:
        cluster.stop()


def test_start_failure_is_reported_clearly(cluster_build: harness.Build, tmp_path: Path) -> None:
    broken = dataclasses.replace(cluster_build, module_dirs={**cluster_build.module_dirs, "kueue": tmp_path})
    with pytest.raises(harness.ClusterError) as failure:
        harness.start(broken, tmp_path, [])
    message = str(failure.value)
    assert "the control plane did not start (exited with 1)" in message
    assert f"reading Kueue CRDs: no *.yaml files in {tmp_path}/config/components/crd/bases" in message


def test_missing_binary_is_named(cluster_build: harness.Build, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "tasgen-cluster").symlink_to(cluster_build.bin_dir / "tasgen-cluster")
    broken = dataclasses.replace(cluster_build, bin_dir=bin_dir)
    with pytest.raises(harness.ClusterError, match="binary etcd not found in -bin-dir"):
        harness.start(broken, tmp_path, [])


def test_unknown_controller_is_refused_by_name(cluster_build: harness.Build, tmp_path: Path) -> None:
    with pytest.raises(harness.ClusterError) as failure:
        harness.start(cluster_build, tmp_path, [], controllers=["job", "cronjob"])
    message = str(failure.value)
    assert "exited with 2" in message
    assert 'unknown controller "cronjob" (known: job)' in message
