"""tasgen as a user installs it: `pip install .` from a clean checkout into a fresh venv prints
no warning, the installed package (templates and schemas included) renders the example
exactly as the committed rendered/, and prints a rule's entry with its example."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

from tests.conftest import REPO, tasgen, tree


def _checkout(into: Path) -> Path:
    """The committed and staged files only (what a clone has), links kept as links."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached"], cwd=REPO, capture_output=True, check=True
    ).stdout.split(b"\0")
    src = into / "src"
    src.mkdir()
    archive = subprocess.run(
        ["tar", "-cf", "-", "--null", "--no-recursion", "-T", "-"],
        cwd=REPO,
        input=b"\0".join(f for f in files if f and os.path.lexists(REPO / f.decode())),
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-xf", "-"], cwd=src, input=archive, check=True)
    return src


def _warnings(output: str) -> list[str]:
    return [line for line in output.splitlines() if "warning" in line.lower() or "deprecat" in line.lower()]


def _pip(python: Path, *args: str) -> str:
    done = subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def test_an_editable_install_is_quiet(tmp_path: Path) -> None:
    src = _checkout(tmp_path)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    # --no-deps: only tasgen's own build is under test here; the wheel test installs the rest.
    output = _pip(env_dir / "bin" / "python", "install", "--no-deps", "-e", str(src))
    assert "Successfully installed tasgen" in output
    assert _warnings(output) == []


def test_the_wheel_builds_quietly_and_the_installed_package_renders(tmp_path: Path) -> None:
    src = _checkout(tmp_path)
    assert (src / "generator" / "templates").is_symlink()
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    wheels = tmp_path / "wheels"
    built = _pip(python, "wheel", "--no-deps", "-w", str(wheels), str(src))
    assert _warnings(built) == []
    (wheel,) = wheels.glob("tasgen-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = archive.namelist()
    # Templates and schemas are data of the package, not packages of their own.
    assert "tasgen/templates/plan.md.j2" in shipped
    assert "tasgen/templates/init/config.yaml.j2" in shipped
    assert "tasgen/schemas/plan-report.schema.json" in shipped
    assert not any(n.endswith("__init__.py") and "/templates/" in n for n in shipped)
    assert not any(n.startswith("tests/") for n in shipped)
    assert _warnings(_pip(python, "install", str(wheel))) == []
    # Another project's top-level `generator` package, installed beside tasgen: neither may
    # shadow the other (tasgen's own folder is named generator/, its import package is not).
    other = tmp_path / "other"
    (other / "generator").mkdir(parents=True)
    (other / "generator" / "__init__.py").write_text("OWNER = 'another project'\n")
    (other / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "another-generator"\nversion = "1.0"\n'
        '[tool.setuptools]\npackages = ["generator"]\n'
    )
    _pip(python, "install", "--no-deps", str(other))
    # Every folder of generator/ that is a package ships, under tasgen/ and nowhere else.
    folders = {
        "/".join(("tasgen", *p.parent.relative_to(src / "generator").parts))
        for p in (src / "generator").rglob("__init__.py")
    }
    assert {n.rsplit("/", 1)[0] for n in shipped if n.endswith("/__init__.py")} == folders

    # Run from elsewhere, so that nothing is imported from the checkout.
    out = tmp_path / "rendered"
    run = subprocess.run(
        [str(env_dir / "bin" / "tasgen"), "render", "-i", str(REPO / "inventories"), "-o", str(out)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "TASGEN_CACHE_DIR": str(tmp_path / "memo")},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    located = subprocess.run(
        [str(python), "-c", "import tasgen; print(tasgen.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert Path(located).is_relative_to(env_dir), located
    # The example's rendered/ is committed; the installed package must write it byte for byte.
    assert tree(out) == tree(REPO / "rendered")
    owner = subprocess.run(
        [str(python), "-c", "import generator; print(generator.OWNER); print(generator.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert owner[0] == "another project" and Path(owner[1]).is_relative_to(env_dir), owner
    # The gate image's entry point, run as the image runs it.
    gate = subprocess.run(
        [str(python), "-m", "tasgen.gate", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert gate.returncode == 0 and "--plan" in gate.stdout, gate.stdout + gate.stderr
    # A rule's entry, its example read from the package's data (tests/ is not installed).
    entry = subprocess.run(
        [str(env_dir / "bin" / "tasgen"), "rules", "flavor-limit"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert entry.returncode == 0, entry.stderr
    assert entry.stdout == tasgen("rules", "flavor-limit").output
    # the example ships inside the wheel (rules/examples.json), and names no tests/ path it lacks
    assert "## Example" in entry.stdout and "[flavor-limit]\n" in entry.stdout
    assert "tests/" not in entry.stdout


def test_nothing_imports_the_package_by_its_folder_name() -> None:
    """From the repository's top, where the folder generator/ is importable too, every tasgen
    module imports as `tasgen` only: a second copy under `generator` would break isinstance."""
    script = (
        "import importlib, pkgutil, sys, tasgen, tasgen.cli\n"
        "for m in pkgutil.walk_packages(tasgen.__path__, 'tasgen.'):\n"
        "    if not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] == 'generator'))\n"
        "print(len([n for n in sys.modules if n.split('.')[0] == 'tasgen']))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    folder_named, imported = run.stdout.splitlines()
    assert folder_named == "[]"
    # Every module of the folder was imported (under its one name), __main__ modules aside.
    modules = [p for p in (REPO / "generator").rglob("*.py") if p.name != "__main__.py"]
    assert int(imported) == len(modules)
