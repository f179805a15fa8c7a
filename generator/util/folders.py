"""What is wrong with a folder argument, in the words every command uses for it."""

from __future__ import annotations

from pathlib import Path


def folder_problem(path: Path) -> str | None:
    """None for a folder; else why it is none: it does not exist, or it is something else."""
    if path.is_dir():
        return None
    if not path.exists():
        return f"{path} does not exist"
    return f"{path} is not a folder"
