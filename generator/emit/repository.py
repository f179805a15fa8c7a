"""Where rendered/ sits in its git repository, against where the engines are told to sync it
(GeneratorConfig sync.path): a render into another folder of the repository writes Flux
Kustomizations and an ApplicationSet that name folders the repository does not have."""

from __future__ import annotations

import os
from pathlib import Path

from ..model import Finding, Where
from ..rules.emit import SYNC_PATH


def in_work_tree(out_path: Path) -> tuple[Path, str] | None:
    """The git work tree holding rendered/ and rendered/'s path in it; None outside any.
    A render's warnings depend on it, so the memo's key holds it too."""
    out = Path(os.path.abspath(out_path))  # as the repository has it: links not resolved
    # rendered/ may be a repository (or a worktree) of its own: then its path is "." - but not
    # a submodule: the engines sync the outer repository, with it inside
    own = (out / ".git").exists() and not _submodule(out / ".git")
    root = out if own else next((p for p in out.parents if (p / ".git").exists()), None)
    return None if root is None else (root, out.relative_to(root).as_posix() or ".")


def _submodule(dot_git: Path) -> bool:
    """A submodule's .git is a file naming its git folder under the outer repository's
    .git/modules/ (a worktree's names .git/worktrees/, a separate git folder any other)."""
    try:
        text = dot_git.read_text(encoding="utf-8", errors="replace") if dot_git.is_file() else ""
    except OSError:
        return False
    parts = Path(text.partition("gitdir:")[2].strip()).parts
    return any(parts[i : i + 2] == (".git", "modules") for i in range(len(parts) - 1))


def sync_path(out_path: Path, out_label: str, repo_path: str, where: Where | None) -> list[Finding]:
    """A sync-path warning when rendered/ is in a git work tree at another path than
    ``repo_path``; nothing outside a work tree (a render to a scratch folder)."""
    found = in_work_tree(out_path)
    if found is None or found[1] == repo_path:
        return []
    root, actual = found
    message = (
        f"{out_label} is {actual!r} in the git repository {root.as_posix()}, but Argo CD and Flux "
        f"are told to sync {repo_path!r} (GeneratorConfig sync.path): they would find nothing "
        f"there; set sync.path: {actual}"
    )
    return [SYNC_PATH(where or Where(f"{out_label}/flux/kueue.yaml", line_col=(1, 1)), message)]
