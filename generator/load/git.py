"""Read an inventory folder as it is at a git revision, from git's objects: no checkout, nothing
written (``tasgen plan --base REF``).

Three git processes whatever the inventory's size: ``rev-parse`` resolves the revision,
``ls-tree`` lists the folder's files at it, ``cat-file --batch`` streams their contents.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath

from ..rules import Rule
from ..rules.load import FILE_UNREADABLE, SYMLINK_OUTSIDE
from .files import SUFFIXES, InputFile, display_path
from .globs import matches, roots

_BLOB_MODES = (b"100644", b"100755")  # regular files (submodules are not inventory)
_LINK_MODE = b"120000"  # a symbolic link: its blob is the target's path


class GitError(Exception):
    """The revision cannot be read (no repository, unknown ref, no git): a usage problem."""


class _NoGit(GitError):
    """git itself cannot be run."""


def read_revision(folder: Path, ref: str) -> list[InputFile]:
    """The inventory files below ``folder`` at ``ref``, shown as ``REF:path/in/repo``; an
    empty list when the folder does not exist at that revision (a first adoption). Symbolic
    links are followed as the working tree's are (generator.load.discovery): to a file or a
    folder inside the inventory folder; one that leaves it, is broken or loops is a problem."""
    top, prefix, commit = _located(folder, folder, ref)
    tree = _Tree.of(_git(top, "ls-tree", "-r", "-z", commit, "--", prefix), prefix)
    tree.repository = cache(lambda: _Repository.of(top, commit))
    texts = _contents(top, list(tree.links.values()))
    tree.links = {
        path: text.decode("utf-8", "surrogateescape") for path, text in zip(tree.links, texts, strict=True)
    }
    found = sorted(tree.files(), key=lambda entry: entry.shown)
    wanted = [entry.target for entry in found if entry.target is not None]
    blobs = dict(zip(wanted, _contents(top, [tree.blobs[t] for t in wanted]), strict=True))
    return [entry.input_file(f"{ref}:{_join(prefix, entry.shown)}", blobs) for entry in found]


def read_files(folder: Path, ref: str, inventory: Path, paths: tuple[str, ...]) -> dict[str, str]:
    """The texts of ``paths`` (relative to ``folder``, e.g. rendered/'s files) at ``ref``, in
    the repository of ``inventory``; a path the revision lacks is left out (a first render).
    Regular files only: rendered/ holds no links."""
    top, prefix, commit = _located(folder, inventory, ref)
    wanted = [_join(prefix, p) for p in paths]
    found: dict[str, str] = {}
    for mode, kind, sha, path in _entries(_git(top, "ls-tree", "-z", commit, "--", *wanted)):
        if kind == b"blob" and mode in _BLOB_MODES and path in wanted:
            found[_relative(path, prefix)] = sha
    texts = _contents(top, list(found.values()))
    return {p: text.decode("utf-8", "replace") for p, text in zip(found, texts, strict=True)}


def read_named(folder: Path, ref: str, inventory: Path, under: str, name: str) -> dict[str, str]:
    """The texts of the files called ``name`` anywhere below ``folder``/``under`` at ``ref``
    (e.g. rendered/labels/'s profile NodeFeatures of every shard), by path relative to
    ``folder``; none when the revision lacks the folder."""
    top, prefix, commit = _located(folder, inventory, ref)
    found: dict[str, str] = {}
    for mode, kind, sha, path in _entries(
        _git(top, "ls-tree", "-r", "-z", commit, "--", _join(prefix, under))
    ):
        if kind == b"blob" and mode in _BLOB_MODES and PurePosixPath(path).name == name:
            found[_relative(path, prefix)] = sha
    texts = _contents(top, list(found.values()))
    return {p: text.decode("utf-8", "replace") for p, text in zip(found, texts, strict=True)}


def read_globbed(inventory: Path, globs: tuple[str, ...], ref: str | None = None) -> list[InputFile]:
    """The regular files of the repository holding ``inventory`` whose paths relative to its top
    folder match one of ``globs`` (generator.load.globs), by path: at ``ref``, shown as
    ``REF:path``, or, with no ``ref``, in the working tree as git sees it (tracked files and
    untracked ones that are not ignored), shown as their paths. Symbolic links are not read:
    a revision's would name files of the machine that runs the plan."""
    if not globs:
        return []
    top = _work_tree(inventory)
    spec = [] if "" in roots(globs) else list(roots(globs))  # the folders to list
    if ref is None:
        listing = _git(top, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *spec)
        paths = sorted({p for p in listing.decode("utf-8", "surrogateescape").split("\0") if p})
        return [_working_file(top, p) for p in paths if matches(globs, p) and _regular(top / p)]
    commit = _commit(top, ref)
    found = {
        path: sha
        for mode, kind, sha, path in _entries(_git(top, "ls-tree", "-r", "-z", commit, "--", *spec))
        if kind == b"blob" and mode in _BLOB_MODES and matches(globs, path)
    }
    ordered = sorted(found)
    blobs = _contents(top, [found[p] for p in ordered])
    return [InputFile(p, f"{ref}:{p}", data) for p, data in zip(ordered, blobs, strict=True)]


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()  # a tracked file deleted in the tree is gone


def _working_file(top: Path, path: str) -> InputFile:
    try:
        return InputFile(path, display_path(top / path), (top / path).read_bytes())
    except OSError as e:
        return InputFile(path, display_path(top / path), None, f"cannot read the file: {e.strerror or e}")


@dataclass(frozen=True)
class _Found:
    """One inventory file of the revision: the regular file read for the path it is shown
    at, or, when there is none (a link that leaves the folder, breaks or loops), why."""

    shown: str  # relative to the inventory folder, links as they are in it
    target: str | None = None  # the regular file's path (links resolved)
    problem: str = ""
    rule: Rule = FILE_UNREADABLE

    def input_file(self, display: str, blobs: dict[str, bytes]) -> InputFile:
        if self.target is None:
            return InputFile(self.shown, display, None, self.problem, self.rule)
        return InputFile(self.shown, display, blobs[self.target])


#: how many links one path may pass through (Linux gives up at 40 too)
_MAX_HOPS = 40


@dataclass(frozen=True)
class _Outside:
    """Where a link leads outside the inventory folder: a path relative to the repository,
    normalised (it starts with "../" when it leaves the repository, "/" when absolute)."""

    path: str


@dataclass
class _Tree:
    """The folder at a revision: its regular files and its links, by path relative to it."""

    blobs: dict[str, str]  # path -> object id
    links: dict[str, str]  # path -> object id of the link, then its target text
    prefix: str = ""  # the inventory folder, relative to the repository
    #: the whole revision, read only when a link leaves the folder
    repository: Callable[[], _Repository] = lambda: _Repository(set(), {})

    @staticmethod
    def of(listing: bytes, prefix: str) -> _Tree:
        tree = _Tree({}, {}, prefix)
        for mode, kind, sha, path in _entries(listing):
            if kind == b"blob" and mode in _BLOB_MODES:
                tree.blobs[_relative(path, prefix)] = sha
            elif kind == b"blob" and mode == _LINK_MODE:
                tree.links[_relative(path, prefix)] = sha
        return tree

    def files(self) -> Iterator[_Found]:
        """Every inventory file, links followed."""
        for path in self.blobs:
            if PurePosixPath(path).suffix in SUFFIXES:
                yield _Found(path, path)
        for path in self.links:
            yield from self._link(path, path, frozenset({""}))

    def _link(self, path: str, shown: str, ancestors: frozenset[str]) -> Iterator[_Found]:
        """A link at ``path`` (links resolved up to it), shown as ``shown``; ``ancestors``: the
        folders walked into through links on the way (the inventory folder, "", always)."""
        target = self._real(path)
        suffixed = PurePosixPath(shown).suffix in SUFFIXES
        if isinstance(target, _Outside):
            # As the working tree: a link out is a problem when it could hold inventory (a
            # file with an inventory suffix, or a folder); any other file there is not read.
            if suffixed or self.repository().is_folder(target.path):
                message = (
                    f"{shown} is a symbolic link outside the inventory folder: tasgen reads nothing there"
                )
                yield _Found(shown, problem=message, rule=SYMLINK_OUTSIDE)
        elif target is not None and target in self.blobs:
            if suffixed:
                yield _Found(shown, target)
        elif target is not None and self._is_folder(target):
            yield from self._folder(target, path, shown, ancestors)
        elif suffixed:
            yield _Found(shown, problem=f"cannot read {shown}: the link is broken or loops")

    def _folder(self, folder: str, link: str, shown: str, ancestors: frozenset[str]) -> Iterator[_Found]:
        """The files of a linked folder; a loop when it holds the link itself."""
        above = {"", *("/".join(link.split("/")[:i]) for i in range(1, link.count("/") + 1))}
        if folder in ancestors | above:
            yield _Found(shown, problem=f"{shown} links to a folder that contains it (a loop)")
            return
        inside, start = ancestors | {folder}, f"{folder}/"
        for path in (p for p in self.blobs if p.startswith(start)):
            if PurePosixPath(path).suffix in SUFFIXES:
                yield _Found(f"{shown}/{path[len(start) :]}", path)
        for path in (p for p in self.links if p.startswith(start)):
            yield from self._link(path, f"{shown}/{path[len(start) :]}", inside)

    def _is_folder(self, path: str) -> bool:
        return path == "" or any(p.startswith(f"{path}/") for p in (*self.blobs, *self.links))

    def _real(self, path: str) -> str | _Outside | None:
        """The path with every link in it resolved (relative to the folder), where it
        leads when that is outside the folder, None when it loops. Resolved in the
        repository's paths, so that a link out and back in ("../inventories/x") stays in."""
        resolved = _resolve(_join(self.prefix, path), self._link_at)
        if resolved is None:
            return None
        inside = None if resolved.startswith("/") else self._inside(resolved)
        return _Outside(resolved) if inside is None else inside

    def _link_at(self, path: str) -> str | None:
        """The target text of the link at a repository path, None when it is no link. The
        repository's links are read only for a path outside the folder: the folder's own
        ancestors are physical (found resolved)."""
        inside = self._inside(path)
        if inside is not None:
            return self.links.get(inside)
        if self.prefix.startswith(f"{path}/"):
            return None
        return self.repository().links.get(path)

    def _inside(self, resolved: str) -> str | None:
        """A normalised repository path relative to the folder ("" for the folder itself),
        None when it is outside."""
        if self.prefix in ("", "."):
            outside = resolved == ".." or resolved.startswith(("../", "/"))
            return None if outside else "" if resolved == "." else resolved
        if resolved == self.prefix:
            return ""
        return resolved[len(self.prefix) + 1 :] if resolved.startswith(f"{self.prefix}/") else None


@dataclass
class _Repository:
    """The whole revision's files and links, by path relative to the repository: what a link
    that leaves the inventory folder leads to (a folder, a file, a link back in)."""

    blobs: set[str]
    links: dict[str, str]  # path -> target text

    @staticmethod
    def of(top: Path, commit: str) -> _Repository:
        blobs, shas = set(), {}
        for mode, kind, sha, path in _entries(_git(top, "ls-tree", "-r", "-z", commit)):
            if kind == b"blob" and mode == _LINK_MODE:
                shas[path] = sha
            elif kind == b"blob":
                blobs.add(path)
        texts = _contents(top, list(shas.values()))
        return _Repository(
            blobs, {p: t.decode("utf-8", "surrogateescape") for p, t in zip(shas, texts, strict=True)}
        )

    def is_folder(self, path: str) -> bool:
        start = f"{path}/"
        return any(p.startswith(start) for p in (*self.blobs, *self.links))


def _physical_join(folder: str, parts: list[str], is_link: Callable[[str], bool]) -> str:
    """``folder``/``parts`` normalised as the kernel walks it, not as text: ".." after a path
    that passes through a link goes up from where the link leads, so the walk stops there and
    returns the rest as it is ("lnk/../x"), for the next round to resolve the link first."""
    walked = [part for part in folder.split("/") if part not in ("", ".")]
    for i, part in enumerate(parts):
        if part in ("", "."):
            continue
        if part != "..":
            walked.append(part)
        elif any(is_link("/".join(walked[:j])) for j in range(1, len(walked) + 1)):
            return "/".join([*walked, *parts[i:]])
        elif walked and walked[-1] != "..":
            walked.pop()
        else:  # above the repository: where that is, is the machine's
            walked.append("..")
    return "/".join(walked) or "."


def _resolve(path: str, link_at: Callable[[str], str | None]) -> str | None:
    """A repository path with every link in it resolved, as the kernel walks it; None when it
    loops. A path out of the repository ("../x") or absolute is where it is: its target is on
    the machine, not in the revision."""
    hops = 0
    while (found := _first_link(path, link_at)) is not None:
        if hops == _MAX_HOPS:
            return None
        hops += 1
        done, text, rest = found
        if text.startswith("/"):
            return text
        path = _physical_join(done, [*text.split("/"), *rest], lambda p: link_at(p) is not None)
        if path == ".." or path.startswith("../"):
            return path
    return path


def _first_link(path: str, link_at: Callable[[str], str | None]) -> tuple[str, str, list[str]] | None:
    """The first link along ``path``: (the folder it is in, its target text, the parts of the
    path after it); None when no part of the path is a link."""
    parts = path.split("/")
    for i in range(1, len(parts) + 1):
        text = link_at("/".join(parts[:i]))
        if text is not None:
            return "/".join(parts[: i - 1]), text, parts[i:]
    return None


def _located(folder: Path, inventory: Path, ref: str) -> tuple[Path, str, str]:
    """The work tree holding ``inventory``, ``folder`` (links resolved) relative to it, and the
    commit ``ref`` names there."""
    top = _work_tree(inventory)
    try:
        prefix = folder.resolve().relative_to(top).as_posix()
    except ValueError as e:
        raise GitError(f"{folder} is not inside the git repository {top}") from e
    return top, prefix, _commit(top, ref)


def _work_tree(folder: Path) -> Path:
    """The git work tree holding the inventory folder: found from the folder, not from the
    current directory (a nested repository or a submodule has a history of its own)."""
    resolved = folder.resolve()
    start = next((p for p in (resolved, *resolved.parents) if p.is_dir()), Path.cwd())
    try:
        return Path(_git(start, "rev-parse", "--show-toplevel").decode().strip()).resolve()
    except _NoGit:
        raise
    except GitError as e:
        raise GitError(f"{folder} is not in a git work tree ({e})") from e


def _commit(top: Path, ref: str) -> str:
    if ref.startswith("-"):  # never an option of git's
        raise GitError(f"{ref!r} is not a revision")
    try:
        return _git(top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    except GitError as e:
        raise GitError(f"{ref!r} is not a commit of the repository {top}") from e


def _entries(listing: bytes) -> Iterator[tuple[bytes, bytes, str, str]]:
    """The entries of an ``ls-tree -z`` listing: (mode, kind, object id, path)."""
    for entry in filter(None, listing.split(b"\0")):
        meta, _, raw_path = entry.partition(b"\t")
        mode, kind, sha = meta.split()
        yield mode, kind, sha.decode(), raw_path.decode("utf-8", "surrogateescape")


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
    for sha in shas:
        header_end = out.index(b"\n", at)
        header = out[at:header_end].split()
        if len(header) != 3:  # "<sha> missing": a damaged clone, or a partial one offline
            raise GitError(f"the object {sha} is missing from the repository (a damaged or partial clone?)")
        size = int(header[2])
        blobs.append(out[header_end + 1 : header_end + 1 + size])
        at = header_end + 1 + size + 1  # the contents are followed by a newline
    return blobs


#: Set by git for hooks and by scripts (git rev-parse --local-env-vars, the -c options aside):
#: they name one repository whatever the directory, and with GIT_DIR alone rev-parse takes the
#: current directory for the top of the work tree.
_REPOSITORY_VARIABLES = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
    "GIT_PREFIX", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_GRAFT_FILE",
    "GIT_SHALLOW_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_CONFIG",
    "GIT_INTERNAL_SUPER_PREFIX",
)  # fmt: skip


#: the variables above that name a path
_PATHS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")


def _environment(cwd: Path) -> dict[str, str]:
    """The repository is the inventory folder's, found from the folder: git's variables are
    dropped, unless they name a work tree that holds it (a bare repository with its work tree
    set, as dotfile managers use)."""
    env = dict(os.environ)
    tree = env.get("GIT_WORK_TREE")
    if not (tree and cwd.resolve().is_relative_to(Path(tree).resolve())):
        env = {k: v for k, v in env.items() if k not in _REPOSITORY_VARIABLES}
    for name in _PATHS:  # kept: git reads a relative one from its own directory, not ours
        if env.get(name):
            env[name] = os.path.abspath(env[name])
    env["GIT_LITERAL_PATHSPECS"] = "1"  # the folder is a path, never pathspec magic (":x", ":!x")
    return env


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            check=False,
            env=_environment(cwd),
        )
    except OSError as e:
        raise _NoGit(f"cannot run git: {e.strerror or e}") from e
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip() or f"git {args[0]} failed"
        raise GitError(reason)
    return done.stdout
