"""The image that GeneratorConfig names by default is the one the release workflow publishes."""

from __future__ import annotations

import tomllib

import yaml

from tasgen.compile import DEFAULT_GATE_IMAGE
from tests.conftest import REPO


def test_default_gate_image_is_what_a_release_publishes() -> None:
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "release.yml").read_text())
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert f"{workflow['env']['IMAGE']}:{version}" == DEFAULT_GATE_IMAGE
    steps = [s.get("run", "") for s in workflow["jobs"]["image"]["steps"]]
    assert any("deploy/gate/build.sh" in run for run in steps)  # the build that CI tests
    assert any("buildah push" in run for run in steps)


def test_the_example_fleet_uses_the_published_image() -> None:
    config = yaml.safe_load((REPO / "inventories" / "config.yaml").read_text())
    assert config["spec"]["gate"]["image"] == DEFAULT_GATE_IMAGE
