"""import-nodes on hostile input and hostile -o targets: a clear message, exit 1, nothing
written, never a traceback."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO


def node(name: str = "n-1", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "8"}},
    }
    body.update(fields)
    return body


def import_nodes(text: str, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tasgen.cli", "import-nodes", "-", *args],
        input=text,
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
        timeout=60,
    )


HUGE = "9" * 5000


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (json.dumps(node(metadata="oops")), "a Node.metadata must be a mapping, got str"),
        (json.dumps(node(status=[1])), "a Node.status must be a mapping, got list"),
        (
            json.dumps(node(metadata={"name": "n-1", "labels": ["a"]})),
            "node 'n-1': metadata.labels must be a mapping, got list",
        ),
        (json.dumps(node(status={"allocatable": "8"})), "node 'n-1': status.allocatable must be a mapping"),
        (
            json.dumps(node(metadata={"name": "n-1", "labels": {"zone": None}})),
            "node 'n-1': label 'zone' has the value null, not a string",
        ),
        (
            json.dumps(node(metadata={"name": "n-1", "labels": {"gpu": True}})),
            "node 'n-1': label 'gpu' has the value true, not a string",
        ),
        (
            "kind: Node\nmetadata: {name: n-1, labels: {rack: 0123}}\n",
            "node 'n-1': label 'rack' has the value",
        ),
        (
            f"kind: Node\nmetadata: {{name: n-1, labels: {{rack: {HUGE}}}}}\n",
            "label 'rack' has the value an integer of more than 30 digits",
        ),
        (
            f"kind: Node\nmetadata: {{name: n-1}}\nstatus: {{allocatable: {{cpu: {HUGE}}}}}\n",
            "allocatable 'cpu' is an integer of more than 30 digits, not a quantity string",
        ),
        (
            "kind: Node\nmetadata: {name: n-1, labels: {1: a}}\n",
            "node 'n-1': key 1 is not a string",
        ),
        # a label value Kubernetes refuses: refused here, the message bounded
        (
            json.dumps(node(metadata={"name": "n-1", "labels": {"x": "y" * 10_000_000}})),
            "node 'n-1': label 'x'='yyy",
        ),
        (json.dumps(node(metadata={"name": "N_2.bad"})), "node name 'N_2.bad' is not a DNS-1123 subdomain"),
        (
            json.dumps(node(status={"allocatable": {"cpu": "10000000000000000000000000"}})),
            "allocatable 'cpu': ",
        ),
        (json.dumps(node(spec={"taints": [{"effect": "NoSchedule"}]})), "taint 0: it has no key"),
        (
            json.dumps(node(spec={"taints": [{"key": "k", "effect": "Bogus"}]})),
            "taint 0: its effect is 'Bogus'",
        ),
    ],
)
def test_wrong_types_and_huge_values_are_clear_errors(text: str, message: str) -> None:
    run = import_nodes(text)
    assert run.returncode == 1, run.stdout[:300]
    assert len(run.stderr) < 2_000  # a 10 MB value is not repeated
    assert message in run.stderr and "[node-list]" in run.stderr
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr
    assert run.stdout == ""


@pytest.fixture
def nodes_json() -> str:
    return json.dumps({"kind": "List", "items": [node()]})


def test_output_replaces_a_regular_file_only(nodes_json: str, tmp_path: Path) -> None:
    target = tmp_path / "nodes.yaml"
    target.write_text("old\n")
    assert import_nodes(nodes_json, "-o", str(target)).returncode == 0
    assert "kind: NodeInventory" in target.read_text() and oct(target.stat().st_mode)[-3:] == "644"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nodes.yaml"]


@pytest.mark.parametrize("target", ["nodes.json", "nodes", "nodes.yaml.txt", ".yaml"])
def test_output_that_validate_would_not_read_as_yaml_is_a_usage_error(
    nodes_json: str, tmp_path: Path, target: str
) -> None:
    """A .json file is read as JSON, a file of another suffix not at all: YAML written there
    would fail validate, or vanish from the inventory without a word."""
    run = import_nodes(nodes_json, "-o", str(tmp_path / target))
    assert run.returncode == 2 and "must be a file name ending in .yaml or .yml" in run.stderr, run.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["Bad Name!", "a\nb: c", "x" * 254, "-lead", ""])
def test_a_name_the_schema_refuses_is_a_usage_error(nodes_json: str, tmp_path: Path, name: str) -> None:
    run = import_nodes(nodes_json, "--name", name, "-o", str(tmp_path / "nodes.yaml"))
    assert run.returncode == 2 and "is not a DNS-1123 subdomain" in run.stderr, run.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_name_the_schema_takes_is_written(nodes_json: str, tmp_path: Path) -> None:
    run = import_nodes(nodes_json, "--name", "prod.gpu-1", "-o", str(tmp_path / "nodes.yml"))
    assert run.returncode == 0, run.stderr
    assert "  name: prod.gpu-1\n" in (tmp_path / "nodes.yml").read_text()


@pytest.mark.parametrize("kind", ["symlink", "fifo", "device"])
def test_output_refuses_anything_but_a_regular_file(nodes_json: str, tmp_path: Path, kind: str) -> None:
    target, aimed = tmp_path / "nodes.yaml", tmp_path / "aimed.yaml"
    if kind == "symlink":
        aimed.write_text("precious\n")
        target.symlink_to(aimed)
    elif kind == "fifo":
        os.mkfifo(target)
    elif os.geteuid() == 0:  # a character device named as -o must be (/dev/full's numbers)
        os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    else:  # mknod needs root: a link to the device, refused alike
        target.symlink_to("/dev/full")
    run = import_nodes(nodes_json, "-o", str(target))
    assert run.returncode == 1 and "is not a regular file" in run.stderr
    assert "nothing was written" in run.stderr and "Traceback" not in run.stderr
    if kind == "symlink":
        assert target.is_symlink() and aimed.read_text() == "precious\n"
    if kind == "fifo":
        assert target.is_fifo()
    if kind == "device" and os.geteuid() == 0:
        assert target.is_char_device()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_output_under_a_regular_file_is_a_clear_error(nodes_json: str, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x\n")
    run = import_nodes(nodes_json, "-o", str(tmp_path / "file" / "nodes.yaml"))
    assert run.returncode == 1 and "a path component is a file, not a folder" in run.stderr
    assert "Traceback" not in run.stderr


def test_output_in_a_read_only_folder_is_a_clear_error(nodes_json: str, tmp_path: Path) -> None:
    """A really read-only folder: a read-only tmpfs in a private mount namespace (root could
    write to a folder without write permission; nobody writes to a read-only mount)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    script = (
        f"mount -t tmpfs -o ro tmpfs {folder} && "
        f"{sys.executable} -m tasgen.cli import-nodes - -o {folder}/nodes.yaml"
    )
    run = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script],
        input=nodes_json,
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
        timeout=60,
    )
    assert run.returncode == 1, run.stderr
    assert f"cannot write {folder}/nodes.yaml: Read-only file system; nothing was written" in run.stderr
    assert "Traceback" not in run.stderr


def test_a_wrong_value_is_reported_where_the_input_has_it(tmp_path: Path) -> None:
    items = [
        node(metadata={"name": f"n-{i}", "labels": {"kubernetes.io/hostname": f"n-{i}"}}) for i in range(50)
    ]
    items[40]["metadata"]["labels"]["x"] = True
    items[45]["status"] = {"allocatable": {"memory": 1.5}}
    for broken, needle, message in (
        (40, '"x": true', "node 'n-40': label 'x' has the value true"),
        (45, '"memory": 1.5', "node 'n-45': allocatable 'memory' is 1.5"),
    ):
        chosen = [item for i, item in enumerate(items) if i <= broken and (i == broken or i < 40)]
        text = json.dumps({"kind": "List", "items": chosen}, indent=2)
        line = next(n for n, row in enumerate(text.splitlines(), 1) if needle in row)
        col = text.splitlines()[line - 1].index(needle) + len(needle.split(": ")[0]) + 3
        (tmp_path / "nodes.json").write_text(text)
        run = subprocess.run(
            [sys.executable, "-m", "tasgen.cli", "import-nodes", str(tmp_path / "nodes.json")],
            capture_output=True,
            text=True,
            check=False,
        )
        assert run.returncode == 1
        assert run.stderr.startswith(f"{tmp_path / 'nodes.json'}:{line}:{col}: error: {message}"), run.stderr


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            'kind: Node\nmetadata:\n  name: a\n  labels:\n    x: "1"\n    x: "2"\n',
            "6:5",
            "duplicate mapping key: 'x'",
        ),
        (
            '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "a", "labels": {"x": "1",\n'
            '  "x": "2"}}}]}\n',
            "2:3",
            "duplicate mapping key: 'x'",
        ),
        (
            "kind: List\nitems:\n  - kind: Node\n    metadata: {name: a}\n"
            "  - kind: Pod\n    metadata: {name: p}\n",
            "5:5",
            "items[1] is kind 'Pod'; every item must be a Node",
        ),
        (
            "kind: List\nitems:\n  - kind: Node\n    metadata: {name: a}\n  - 7\n",
            "5:5",
            "items[1] is a number",
        ),
        ("kind: List\nitems:\n  - kind: Node\n    metadata: {name: a}\n  -\n", "5:4", "items[1] is null"),
        ("kind: Node\nmetadata: {name: a}\n---\n- 1\n", "4:1", "expected the output of `kubectl get nodes"),
    ],
)
def test_a_problem_of_the_input_is_reported_at_its_place(text: str, where: str, message: str) -> None:
    """import-nodes problems at 1:1 named neither the key nor the item (found in review)."""
    run = import_nodes(text)
    assert run.returncode == 1 and f"<stdin>:{where}: error: {message}" in run.stderr, run.stderr


def test_an_empty_document_beside_nodes_lists_no_node() -> None:
    run = import_nodes("kind: Node\nmetadata:\n  name: a\n---\n")
    assert run.returncode == 0 and "  - name: a\n" in run.stdout, run.stderr
    empty = import_nodes("")  # kubectl printed nothing: never an empty inventory
    assert empty.returncode == 1 and "expected the output of `kubectl get nodes" in empty.stderr


def test_an_inventory_folder_named_but_missing_is_a_usage_error(nodes_json: str, tmp_path: Path) -> None:
    """-i names where the filter's sources are; a typo silently fell back to the defaults,
    importing back the labels tasgen's own sources write."""
    run = import_nodes(nodes_json, "-i", str(tmp_path / "nope"), "-o", str(tmp_path / "nodes.yaml"))
    assert run.returncode == 2 and f"{tmp_path / 'nope'} does not exist" in run.stderr, run.stderr
    assert list(tmp_path.iterdir()) == []
    assert import_nodes(nodes_json, cwd=tmp_path).returncode == 0  # no -i, no inventories/: defaults


BAD_NODES = """\
{"apiVersion": "v1", "kind": "List", "items": [
  {"kind": "Node", "metadata": {"name": "Bad_Name"}, "status": {}},
  {"kind": "Node", "metadata": {"name": "good"}, "status": {}},
  {"kind": "Node", "metadata": {"name": "good", "labels": {"a": "b"}}, "status": {}},
  {"kind": "Node", "metadata": {"name": "other", "labels": {"x": true}}, "status": {}}
]}
"""


def test_every_bad_node_is_reported_at_its_place_and_nothing_is_written(tmp_path: Path) -> None:
    """One bad node once hid the next: each is reported, then nothing is written."""
    out = tmp_path / "nodes.yaml"
    run = import_nodes(BAD_NODES, "-o", str(out))
    assert run.returncode == 1 and run.stdout == ""
    lines = BAD_NODES.splitlines()
    bad_name, again, value = lines[1].index('"Bad_Name"'), lines[3].index("{"), lines[4].index("true")
    assert run.stderr.splitlines() == [
        f"<stdin>:2:{bad_name + 1}: error: node name 'Bad_Name' is not a DNS-1123 subdomain of at "
        "most 63 characters (lowercase letters, digits, '-' and '.'): tasgen cannot label it "
        "through NFD [node-list]",
        f"<stdin>:4:{again + 1}: error: node 'good' is listed again; the first is in <stdin> [node-list]",
        f"<stdin>:5:{value + 1}: error: node 'other': label 'x' has the value true, not a string; "
        "label values are strings (quote it) [node-list]",
        "tasgen import-nodes: 3 error(s); nothing was written",
    ]
    assert not out.exists()


def test_a_written_inventory_is_reported_with_its_node_count(nodes_json: str, tmp_path: Path) -> None:
    out = tmp_path / "nodes.yaml"
    run = import_nodes(nodes_json, "-o", str(out))
    assert run.returncode == 0, run.stderr
    written = yaml.safe_load(out.read_text())["nodes"]
    assert run.stdout == f"wrote {out}: {len(json.loads(nodes_json)['items'])} node(s)\n" and written
