"""Read an inventory folder as it is at a git revision, from git's objects: no checkout, nothing
written (``tasgen plan --base REF``).

Three git processes whatever the inventory's size: ``rev-parse`` resolves the revision,
``ls-tree`` lists the folder's files at it, ``cat-file --batch`` streams their contents.
"""

from __future__ import annotations

import subprocess
from pathlib import Path, PurePosixPath

from generator.load.files import SUFFIXES, InputFile

_BLOB_MODES = (b"100644", b"100755")  # regular files; symlinks and submodules are not inventory


class GitError(Exception):
    """The revision cannot be read (no repository, unknown ref, no git): a usage problem."""


def read_revision(folder: Path, ref: str) -> list[InputFile]:
    """The inventory files below ``folder`` at ``ref``, shown as ``REF:path/in/repo``; an
    empty list when the folder does not exist at that revision (a first adoption)."""
    top = Path(_git(Path.cwd(), "rev-parse", "--show-toplevel").decode().strip()).resolve()
    try:
        prefix = folder.resolve().relative_to(top).as_posix()
    except ValueError as e:
        raise GitError(f"{folder} is not inside the git repository {top}") from e
    commit = _commit(top, ref)
    entries = _blobs(_git(top, "ls-tree", "-r", "-z", commit, "--", prefix), prefix)
    blobs = _contents(top, [sha for sha, _ in entries])
    return [
        InputFile(relative, f"{ref}:{_join(prefix, relative)}", blob)
        for (_, relative), blob in zip(entries, blobs, strict=True)
    ]


def _commit(top: Path, ref: str) -> str:
    if ref.startswith("-"):  # never an option of git's
        raise GitError(f"{ref!r} is not a revision")
    try:
        return _git(top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    except GitError as e:
        raise GitError(f"{ref!r} is not a commit of the repository {top}") from e


def _blobs(listing: bytes, prefix: str) -> list[tuple[str, str]]:
    """(object id, path relative to the folder) of each inventory file, sorted as
    :func:`generator.load.files.discover` sorts the working tree's."""
    found = []
    for entry in filter(None, listing.split(b"\0")):
        meta, _, raw_path = entry.partition(b"\t")
        mode, kind, sha = meta.split()
        path = raw_path.decode("utf-8", "surrogateescape")
        if kind == b"blob" and mode in _BLOB_MODES and PurePosixPath(path).suffix in SUFFIXES:
            found.append((sha.decode(), _relative(path, prefix)))
    return sorted(found, key=lambda entry: entry[1])


def _relative(path: str, prefix: str) -> str:
    return path if prefix in ("", ".") else PurePosixPath(path).relative_to(prefix).as_posix()


def _join(prefix: str, relative: str) -> str:
    return relative if prefix in ("", ".") else f"{prefix}/{relative}"


def _contents(top: Path, shas: list[str]) -> list[bytes]:
    """Each object's bytes, in order, from one ``cat-file --batch``."""
    if not shas:
        return []
    out = _git(top, "cat-file", "--batch", stdin="".join(f"{sha}\n" for sha in shas).encode())
    blobs, at = [], 0
    for _ in shas:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        blobs.append(out[header_end + 1 : header_end + 1 + size])
        at = header_end + 1 + size + 1  # the contents are followed by a newline
    return blobs


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=False)
    except OSError as e:
        raise GitError(f"cannot run git: {e.strerror or e}") from e
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip() or f"git {args[0]} failed"
        raise GitError(reason)
    return done.stdout
