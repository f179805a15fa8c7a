"""The Go builds' cache (tests/gobuild.py): built once per pin, even when asked for at once."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from tests import gobuild


def test_two_builds_at_once_build_the_tool_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A tiny module of ours: two pytest-xdist workers, or CI's early build and a test, asking
    # for the same tool must not both build it (the second waits for the first's cache).
    module = tmp_path / "hello"
    module.mkdir()
    (module / "go.mod").write_text("module tasgen.test/hello\n\ngo 1.26.0\n")
    (module / "go.sum").write_text("")
    (module / "main.go").write_text('package main\n\nfunc main() { println("hello") }\n')
    monkeypatch.setenv("TASGEN_TOOLS_CACHE", str(tmp_path / "cache"))
    builds: list[list[str]] = []
    run_go = gobuild.run_go

    def counted(module: Path, args: list[str], what: str, timeout: float = gobuild.BUILD_TIMEOUT_S) -> str:
        if args[0] == "build":
            builds.append(args)
        return run_go(module, args, what, timeout)

    monkeypatch.setattr(gobuild, "run_go", counted)
    together = threading.Barrier(2)
    found: list[Path] = []

    def ask() -> None:
        together.wait()
        found.append(gobuild.build_tools(module, {"hello": "tasgen.test/hello"}))

    askers = [threading.Thread(target=ask) for _ in range(2)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join(timeout=300)
    assert len(found) == 2 and found[0] == found[1]
    assert len(builds) == 1, builds
    done = subprocess.run([str(found[0] / "hello")], capture_output=True, text=True, check=True)
    assert done.stderr == "hello\n"
