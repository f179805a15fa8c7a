"""An inventory folder read at a git revision (``tasgen plan``'s base) is read as the working
tree's checkout of that revision is: the same files under the same names, symbolic links to
files and folders inside the folder followed, and the same problems for links that leave it,
are broken or loop (a link at the base was once dropped without a word)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tasgen.load import git as git_module
from tasgen.load.files import InputFile, read_inventory
from tasgen.load.git import GitError, read_revision

#: link name -> target, relative to the link's folder
LINKS = {
    "queues/training.yaml": "../shared/training.yaml.tmpl",  # a file whose name has no suffix
    "more": "shared",  # a folder
    "queues/nested": "../more",  # a link to a link to a folder
    "out.yaml": "../../outside.yaml",  # leaves the inventory folder
    "broken.yaml": "nowhere.yaml",
    "shared/loop": "..",  # a folder that contains it
    "self.yaml": "self.yaml",
    "here": ".",  # the inventory folder itself: a loop
    "via.yaml": "here/nodes.yaml",  # through it, to a file: read
    "back.yaml": "../inventories/shared/extra.yaml",  # out of the folder and back in: read
    "README.md": "../README.md",  # a file outside that is no inventory: not read, no problem
    "docs": "../docs",  # a folder outside: a problem
    "gone": "../nowhere",  # broken, and no inventory file by its name: nothing
    "ext": "../other/linkdir",  # out to a link to a folder: a problem
    "back2.yaml": "../alias/shared/extra.yaml",  # out, and back in through a link of the repository
    "deep": "shared/sub",  # a folder two levels down...
    "up.yaml": "deep/../extra.yaml",  # ...and up from where it leads: shared/extra.yaml, not ./extra.yaml
    "outup.yaml": "../alias/deep/../nodes.yaml",  # the same through the repository's link: shared/nodes.yaml
}


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, env=env, check=True)


def _shape(files: list[InputFile]) -> list[tuple[str, bytes | None, str | None]]:
    return [(f.relative, f.data, None if f.data is not None else f.rule.id) for f in files]


def test_a_revision_is_read_as_its_checkout_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "repo"
    inventory = root / "inventories"
    (inventory / "queues").mkdir(parents=True)
    (inventory / "shared").mkdir()
    (inventory / "nodes.yaml").write_text("kind: NodeInventory\n")
    (inventory / "shared" / "training.yaml.tmpl").write_text("kind: ClusterQueuePlan\n")
    (inventory / "shared" / "extra.yaml").write_text("kind: TopologySource\n")
    (inventory / "shared" / "nodes.yaml").write_text("kind: NodeInventory  # shared\n")
    (inventory / "shared" / "sub").mkdir()
    (inventory / "shared" / "sub" / "q.yaml").write_text("kind: ClusterQueuePlan\n")
    (tmp_path / "outside.yaml").write_text("kind: Outside\n")
    (root / "README.md").write_text("# the repository\n")
    (root / "docs").mkdir()
    (root / "docs" / "more.yaml").write_text("kind: Outside\n")
    (root / "other" / "realdir").mkdir(parents=True)
    (root / "other" / "realdir" / "q.yaml").write_text("kind: Outside\n")
    os.symlink("realdir", root / "other" / "linkdir")
    os.symlink("inventories", root / "alias")
    for link, target in LINKS.items():
        os.symlink(target, inventory / link)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    monkeypatch.chdir(root)
    at_head = read_revision(inventory, "HEAD")
    assert _shape(at_head) == _shape(read_inventory(inventory))
    read = {f.relative: f.data for f in at_head}
    assert read["queues/training.yaml"] == b"kind: ClusterQueuePlan\n"
    assert read["queues/nested/extra.yaml"] == read["more/extra.yaml"] == b"kind: TopologySource\n"
    assert {f.relative: f.rule.id for f in at_head if f.data is None} == {
        "out.yaml": "symlink-outside",
        "docs": "symlink-outside",
        "ext": "symlink-outside",
        "broken.yaml": "file-unreadable",
        "self.yaml": "file-unreadable",
        "shared/loop": "file-unreadable",
        "more/loop": "file-unreadable",
        "queues/nested/loop": "file-unreadable",
        "here": "file-unreadable",
    }
    assert read["via.yaml"] == read["nodes.yaml"]
    assert read["back.yaml"] == read["back2.yaml"] == b"kind: TopologySource\n"
    assert "README.md" not in read and "gone" not in read
    assert (
        read["up.yaml"] == b"kind: TopologySource\n"
        and read["outup.yaml"] == b"kind: NodeInventory  # shared\n"
    )


def _committed(root: Path, folder: str, text: str) -> Path:
    """A repository at root with one inventory file in folder, committed."""
    (root / folder).mkdir(parents=True)
    (root / folder / "nodes.yaml").write_text(text)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    return root / folder


def test_the_repository_is_the_inventory_folders_not_the_current_directorys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repository nested in another (or run from outside any): the base is read from the
    repository that holds the inventory; the outer one's HEAD has no inventory at all."""
    outer = tmp_path / "outer"
    outer.mkdir()
    _git(outer, "init", "-q", "-b", "main")
    _git(outer, "commit", "-q", "--allow-empty", "-m", "outer")
    inventory = _committed(outer / "inner", "inventories", "kind: NodeInventory\n")
    for cwd in (outer, tmp_path):
        monkeypatch.chdir(cwd)
        assert [(f.relative, f.data) for f in read_revision(inventory, "HEAD")] == [
            ("nodes.yaml", b"kind: NodeInventory\n")
        ]


@pytest.mark.parametrize("folder", [":x", ":!x", ":(glob)*"])
def test_a_folder_name_is_never_pathspec_magic(tmp_path: Path, folder: str) -> None:
    inventory = _committed(tmp_path / "repo", folder, "kind: NodeInventory\n")
    assert [(f.relative, f.data) for f in read_revision(inventory, "HEAD")] == [
        ("nodes.yaml", b"kind: NodeInventory\n")
    ]


def test_a_missing_object_is_a_git_error(tmp_path: Path) -> None:
    """A damaged clone (or a partial one without its remote): cat-file answers "<sha> missing"."""
    inventory = _committed(tmp_path / "repo", "inventories", "kind: NodeInventory\n")
    found = subprocess.run(
        ["git", "rev-parse", "HEAD:inventories/nodes.yaml"],
        cwd=inventory,
        capture_output=True,
        text=True,
        check=True,
    )
    sha = found.stdout.strip()
    (tmp_path / "repo" / ".git" / "objects" / sha[:2] / sha[2:]).unlink()
    with pytest.raises(GitError, match=f"the object {sha} is missing from the repository"):
        read_revision(inventory, "HEAD")


@pytest.mark.parametrize("git_dir", ["absolute", "relative"])
def test_git_s_own_repository_variables_do_not_move_the_work_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git_dir: str
) -> None:
    """In a hook git sets GIT_DIR; with it alone, rev-parse took the current directory (the
    inventory folder) for the top, and the whole repository was read as the inventory."""
    inventory = _committed(tmp_path / "repo", "inventories", "kind: NodeInventory\n")
    (tmp_path / "repo" / "README.yaml").write_text("kind: NotInventory\n")
    _git(tmp_path / "repo", "add", "-A")
    _git(tmp_path / "repo", "commit", "-q", "-m", "more")
    monkeypatch.chdir(tmp_path / "repo" if git_dir == "relative" else inventory)
    monkeypatch.setenv("GIT_DIR", ".git" if git_dir == "relative" else str(tmp_path / "repo" / ".git"))
    assert [(f.relative, f.data) for f in read_revision(inventory, "HEAD")] == [
        ("nodes.yaml", b"kind: NodeInventory\n")
    ]


def test_a_bare_repository_with_its_work_tree_set_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GIT_DIR and GIT_WORK_TREE both set, no .git in the tree (as dotfile managers keep a
    repository): they name the work tree that holds the inventory, so they are kept."""
    bare, tree = tmp_path / "repo.git", tmp_path / "tree"
    _git(tmp_path, "init", "-q", "--bare", str(bare))
    (tree / "inventories").mkdir(parents=True)
    (tree / "inventories" / "nodes.yaml").write_text("kind: NodeInventory\n")
    monkeypatch.setenv("GIT_DIR", str(bare))
    monkeypatch.setenv("GIT_WORK_TREE", str(tree))
    _git(tree, "add", "-A")
    _git(tree, "commit", "-q", "-m", "base")
    monkeypatch.chdir(tree)
    assert [(f.relative, f.data) for f in read_revision(tree / "inventories", "HEAD")] == [
        ("nodes.yaml", b"kind: NodeInventory\n")
    ]


def test_a_link_that_stays_inside_never_reads_the_whole_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The repository's listing (every path and link of the revision) is read only for a link
    that leaves the folder; a nested folder's own ancestors are no links to look up."""
    inventory = _committed(tmp_path / "repo", "deploy/inventories/shared", "kind: NodeInventory\n").parent
    (inventory / "queues").mkdir()
    os.symlink("../shared/nodes.yaml", inventory / "queues" / "nodes.yaml")
    _git(tmp_path / "repo", "add", "-A")
    _git(tmp_path / "repo", "commit", "-q", "-m", "link")

    def whole(*_: object) -> None:
        raise AssertionError("the whole repository was read")

    monkeypatch.setattr(git_module._Repository, "of", staticmethod(whole))
    read = {f.relative: f.data for f in read_revision(inventory, "HEAD")}
    assert read == {
        "queues/nodes.yaml": b"kind: NodeInventory\n",
        "shared/nodes.yaml": b"kind: NodeInventory\n",
    }


def test_git_s_relative_variables_in_a_hook_are_read_from_where_git_set_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git --work-tree=. commit` runs its hooks with GIT_DIR=.git and GIT_WORK_TREE=.: they
    hold, relative to the hook's directory (tasgen's), not to the folder git runs in."""
    inventory = _committed(tmp_path / "repo", "inventories", "kind: NodeInventory\n")
    monkeypatch.chdir(tmp_path / "repo")
    monkeypatch.setenv("GIT_DIR", ".git")
    monkeypatch.setenv("GIT_WORK_TREE", ".")
    assert [(f.relative, f.data) for f in read_revision(inventory, "HEAD")] == [
        ("nodes.yaml", b"kind: NodeInventory\n")
    ]


def test_a_chain_of_forty_links_is_followed(tmp_path: Path) -> None:
    """Linux follows up to 40 links in one path: the revision reader's hop counter lets a
    chain that long through, as the working tree's reader does."""
    inventory = tmp_path / "repo" / "inventories"
    inventory.mkdir(parents=True)
    (inventory / "nodes.yaml").write_text("kind: NodeInventory\n")
    for i in range(40):
        os.symlink("nodes.yaml" if i == 39 else f"hop{i + 1}.yaml", inventory / f"hop{i}.yaml")
    _git(tmp_path / "repo", "init", "-q", "-b", "main")
    _git(tmp_path / "repo", "add", "-A")
    _git(tmp_path / "repo", "commit", "-q", "-m", "base")
    at_head = read_revision(inventory, "HEAD")
    assert _shape(at_head) == _shape(read_inventory(inventory))
    assert {f.relative: f.data for f in at_head}["hop0.yaml"] == b"kind: NodeInventory\n"
