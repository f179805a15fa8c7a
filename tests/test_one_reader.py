"""Every YAML input goes through the one guarded reader (generator.parse): no module of the
package but generator.parse calls a YAML parser that builds data (yaml.safe_load and kin,
yaml_rs.loads), so that an alias bomb, a deep nest or a foreign tag is refused alike in the
inventory, a fetched answer, kubectl's nodes, the previous render and the gate's plan."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "generator"
READER = PACKAGE / "parse"
#: what builds data from a YAML text (PyYAML's event and position functions, which build
#: nothing, are left to the modules that look up positions)
LOADERS = {
    "yaml": {
        "load",
        "load_all",
        "safe_load",
        "safe_load_all",
        "full_load",
        "full_load_all",
        "unsafe_load",
        "unsafe_load_all",
        "compose",
        "compose_all",
    },
    "yaml_rs": {"load", "loads"},
}


def loader_calls(path: Path, root: Path = REPO) -> list[str]:
    """`file:line: module.function` for each use of a YAML loader in a module, in line order:
    an attribute (``yaml.safe_load``), or an import of the function itself (``from yaml import
    safe_load``)."""
    tree = ast.parse(path.read_text(), str(path))
    shown = path.relative_to(root).as_posix()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.attr in LOADERS.get(node.value.id, ()):
                found.append(f"{shown}:{node.lineno}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module in LOADERS:
            found += [
                f"{shown}:{node.lineno}: {node.module}.{alias.name}"
                for alias in node.names
                if alias.name in LOADERS[node.module]
            ]
    return sorted(found, key=lambda call: int(call.split(":")[1]))


def test_only_the_guarded_reader_parses_yaml() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 50  # the package is there, not an empty glob
    outside = [p for p in modules if not p.is_relative_to(READER)]
    assert [call for path in outside for call in loader_calls(path)] == []
    # ... and the reader itself does parse with them: the scan sees what it looks for.
    assert any(loader_calls(p) for p in sorted(READER.rglob("*.py")))


def test_the_scan_finds_each_way_of_calling_a_loader(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import yaml\nimport yaml_rs\nfrom yaml import safe_load_all\n"
        "a = yaml.safe_load('x')\nb = yaml_rs.loads('x')\nc = yaml.parse('x')\n"
    )
    found = [call.split(": ", 1)[1] for call in loader_calls(module, tmp_path)]
    assert found == ["yaml.safe_load_all", "yaml.safe_load", "yaml_rs.loads"], found
