"""The gate image, built here as CI and the release build it (deploy/gate/build.sh: mmdebstrap
base, buildah with vfs storage and chroot isolation, no Docker daemon), run through one drain
against the real control plane: its own entrypoint, as its own non-root user, with the gate's
ServiceAccount token (so the admission policy lets its switch through).

Needs root, buildah and mmdebstrap (.ci/test installs them); without them the test fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from tests.gate.install import GateInstall, portable_kubeconfig
from tests.gate.support import (
    ROOT,
    GateRun,
    Kueue,
    admitted_on,
    cluster_queue,
    flavors_of,
    recorded,
    unique,
    wait_for,
    write_plan,
)

pytestmark = pytest.mark.cluster
TAG = "localhost/tasgen-gate:test"
ENV = {**os.environ, "STORAGE_DRIVER": "vfs", "BUILDAH_ISOLATION": "chroot"}


def buildah(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["buildah", *args], capture_output=True, text=True, timeout=timeout, env=ENV, check=False
    )


@pytest.fixture(scope="module")
def image() -> str:
    missing = [tool for tool in ("buildah", "mmdebstrap") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"the gate image test needs {' and '.join(missing)} (apt-get install)", pytrace=False)
    build = subprocess.run(
        [str(ROOT / "deploy" / "gate" / "build.sh"), TAG],
        capture_output=True,
        text=True,
        timeout=30 * 60,
        env=ENV,
        check=False,
    )
    assert build.returncode == 0, build.stderr[-5000:]
    return TAG


@pytest.fixture
def container(image: str) -> Iterator[str]:
    made = buildah("from", "--quiet", image)
    assert made.returncode == 0, made.stderr
    name = made.stdout.strip()
    yield name
    buildah("rm", name)


def entrypoint(image: str) -> list[str]:
    found = buildah("inspect", "--type", "image", image)
    assert found.returncode == 0, found.stderr
    config = json.loads(found.stdout)["OCIv1"]["config"]
    return list(config["Entrypoint"])


def test_gate_image_runs_as_non_root_with_consistent_pins(image: str, container: str) -> None:
    user = buildah("run", container, "--", "id", "-u")
    assert user.stdout.strip() == "65532", user
    check = buildah("run", container, "--", "pip", "check")
    assert check.returncode == 0 and "No broken requirements" in check.stdout, check
    assert entrypoint(image) == ["python", "-m", "tasgen.gate"]


def test_gate_image_drains_and_switches_on_the_real_control_plane(
    api_client: client.ApiClient, kueue: Kueue, image: str, container: str, tmp_path: Path
) -> None:
    f = {k: kueue.flavor(unique(f"gate-img-{k}")) for k in ("a", "b")}
    cq = unique("gate-img-cq")
    kueue.queue(cq, {f["a"]: 0, f["b"]: 4}, managed=True)
    ns = kueue.namespace(cq)
    kueue.job(ns, "train")  # Kueue releases it by itself once evicted
    wait_for("the Job admitted on b", lambda: any(admitted_on(w) == f["b"] for w in kueue.workloads(ns)))
    wait_for("Kueue to count the reservation", lambda: kueue.reserving(cq, 1))

    gate = GateInstall(api_client, [cq], tmp_path)
    try:
        gate.await_active(kueue)
        mount = tmp_path / "mount"
        mount.mkdir(mode=0o755)
        mount.chmod(0o755)
        portable_kubeconfig(api_client, gate.token, mount / "kubeconfig")
        write_plan(mount / "plan.yaml", [cluster_queue(cq, {f["a"]: 4}, managed=True)]).chmod(0o644)
        args = ["--plan", "/etc/tasgen/plan.yaml", "--kubeconfig", "/etc/tasgen/kubeconfig"]
        args += ["--timeout", "120", "--poll-interval", "0.5", "--event-namespace", "default"]
        done = buildah(
            "run",
            "--network",
            "host",
            "--volume",
            f"{mount}:/etc/tasgen:ro",
            container,
            "--",
            *entrypoint(image),
            *args,
            timeout=240,
        )
    finally:
        gate.close()
    run = GateRun(done.returncode, done.stdout, done.stderr)
    assert run.code == 0, run
    assert run.updates() == ["Hold", "Switch", "Restore"], run
    live = kueue.get(cq)
    assert flavors_of(live) == {f["a"]: "4"}
    assert live["spec"]["stopPolicy"] == "None" and recorded(live) is None
    assert kueue.events(cq) == ["Draining", "Switched", "StopPolicyRestored"]
