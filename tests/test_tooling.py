"""The project's own strict tooling is part of the test suite: ruff, mypy (strict on the
package) and the import-linter layer contracts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

CHECKS = {
    "ruff": [sys.executable, "-m", "ruff", "check", "generator", "tests", "bench"],
    "ruff-format": [sys.executable, "-m", "ruff", "format", "--check", "generator", "tests", "bench"],
    "mypy": [sys.executable, "-m", "mypy"],
    "import-linter": [
        sys.executable,
        "-c",
        "import sys; from importlinter.cli import lint_imports_command; "
        "sys.argv = ['lint-imports', '--no-cache']; lint_imports_command()",
    ],
}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_tool_is_clean(name: str) -> None:
    result = subprocess.run(CHECKS[name], cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
