"""Which files make the inventory, and which files and folders could not be read.

A skipped file or folder would silently drop its objects (and rendering would then delete
their queues and flavors), so nothing is skipped quietly: every folder below the inventory
is listed, and each file with an inventory suffix is either read or reported.

Symbolic links (a file or a folder alike) are followed only when their resolved target
stays inside the inventory folder: nothing outside it is ever read, so a review of the
inventory folder is a review of everything tasgen reads. A link that leaves the folder, a
broken link, a link loop, or a file that is not a regular file (a FIFO would block the read)
is a problem of its own.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..rules import Rule
from ..rules.load import FILE_UNREADABLE, SYMLINK_OUTSIDE


@dataclass(frozen=True)
class Entry:
    """A file to read, or (``error`` set) one that cannot be."""

    path: Path  # as found below the inventory folder (links not resolved)
    relative: str  # POSIX, relative to the inventory folder
    error: str | None = None
    rule: Rule = FILE_UNREADABLE
    #: the file that was judged to be inside the inventory folder, links resolved: what is
    #: read (so that a link changed after discovery cannot lead outside)
    target: Path | None = None


def discover(root: Path, suffixes: tuple[str, ...]) -> list[Entry]:
    """Every inventory file below ``root``, in an order independent of the filesystem."""
    real_root = Path(os.path.realpath(root))
    walk = _Walk(real_root, suffixes)
    entries = list(walk.folder(root, "", frozenset({real_root})))
    return sorted(entries, key=lambda e: e.relative)


class _Walk:
    def __init__(self, real_root: Path, suffixes: tuple[str, ...]) -> None:
        self.real_root, self.suffixes = real_root, suffixes

    def folder(self, path: Path, relative: str, ancestors: frozenset[Path]) -> Iterator[Entry]:
        try:
            with os.scandir(path) as listing:
                names = sorted(entry.name for entry in listing)
        except OSError as e:
            shown = relative.rstrip("/") or "."
            message = f"cannot list the folder {shown}: {_why(e)}"
            yield Entry(path, f"{relative}/" if relative else "./", message)
            return
        for name in names:
            yield from self.entry(path / name, f"{relative}{name}", ancestors)

    def entry(self, path: Path, relative: str, ancestors: frozenset[Path]) -> Iterator[Entry]:
        try:
            info = path.lstat()
        except OSError as e:
            yield Entry(path, relative, f"cannot read {relative}: {_why(e)}")
            return
        if stat.S_ISLNK(info.st_mode):
            yield from self.link(path, relative, ancestors)
        elif stat.S_ISDIR(info.st_mode):
            yield from self.folder(path, f"{relative}/", ancestors | {Path(os.path.realpath(path))})
        elif path.suffix in self.suffixes:
            yield self.file(path, relative, info.st_mode, Path(os.path.realpath(path)))

    def link(self, path: Path, relative: str, ancestors: frozenset[Path]) -> Iterator[Entry]:
        target = Path(os.path.realpath(path))
        try:
            info = target.stat()
        except OSError as e:
            if path.suffix in self.suffixes:  # a broken link could only have been this file
                message = f"cannot read {relative}: the link is broken or loops ({_why(e)})"
                yield Entry(path, relative, message)
            return
        is_folder = stat.S_ISDIR(info.st_mode)
        if not is_folder and path.suffix not in self.suffixes:
            return
        if not target.is_relative_to(self.real_root):
            message = (
                f"{relative} is a symbolic link to {target}, outside the inventory folder: tasgen reads "
                "nothing outside it (copy the file in, or link within the folder)"
            )
            yield Entry(path, relative, message, SYMLINK_OUTSIDE)
        elif is_folder and target in ancestors:
            yield Entry(path, relative, f"{relative} links to a folder that contains it (a loop)")
        elif is_folder:
            yield from self.folder(path, f"{relative}/", ancestors | {target})
        else:
            yield self.file(path, relative, info.st_mode, target)

    def file(self, path: Path, relative: str, mode: int, target: Path) -> Entry:
        if not stat.S_ISREG(mode):
            return Entry(path, relative, f"cannot read {relative}: not a regular file")
        if not target.is_relative_to(self.real_root):  # a folder above it changed meanwhile
            return Entry(path, relative, f"{relative} resolves outside the inventory folder", SYMLINK_OUTSIDE)
        return Entry(path, relative, target=target)


def _why(error: OSError) -> str:
    return error.strerror or str(error)
