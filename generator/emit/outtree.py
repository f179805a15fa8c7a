"""rendered/ as one object: read once under a lock, replaced as a whole.

A render builds the complete new tree in a sibling staging folder (changed files written,
the rest hard-linked), makes it durable with one ``syncfs``, then swaps it with rendered/ in
one ``renameat2(RENAME_EXCHANGE)`` (two renames where that is missing), under an flock on the
folder that holds rendered/: a reader sees the whole old tree or the whole new one, whenever
the process dies. Why and how: docs/explanation/guarantees.md, "Kill".
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import hashlib
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .tree import HEADER

_HEADER = HEADER.encode()
#: Sibling folders of a render: being built (later: the old tree), and complete (fallback).
_STAGE, _READY = "tasgen-stage", "tasgen-ready"
#: Older tasgen staged each file beside its target as ``.<name>.yaml.<8 random>``.
_OLD_STAGE_SUFFIX = 8


class OutputError(Exception):
    """rendered/ cannot be read or written; rendered/ is as it was."""


@dataclass
class OutputTree:
    """rendered/ as read under the lock: what tasgen owns there and what else is there."""

    path: Path  # absolute, symlinks resolved: the folder that is swapped
    label: str  # as shown to users
    owned: dict[str, str] = field(default_factory=dict)  # relative path -> text tasgen wrote
    litter: list[str] = field(default_factory=list)  # older tasgen's staging files inside it
    folders: dict[str, int] = field(default_factory=dict)  # relative folder -> mode ("" = itself)
    others: list[str] = field(default_factory=list)  # everything else that is not a folder

    def replace(self, new: Mapping[str, str]) -> dict[str, str]:
        """Make rendered/ exactly ``new`` plus the files tasgen does not own, atomically;
        on any failure rendered/ is left as it was and :class:`OutputError` says why.
        Returns the SHA-256 of each file of ``new`` (the memo's record), taken from the
        bytes as they are written rather than by encoding the tree once more."""
        stage = self.path.parent / f".{self.path.name}.{_STAGE}-{secrets.token_hex(6)}"
        try:
            stage.mkdir(0o755)
            digests = self._fill(stage, new)
            _durable(stage)
            _swap(stage, self.path)
        except UnicodeEncodeError as e:  # found while filling the stage, which goes
            raise OutputError(f"cannot write {self.label}: {e.reason} in the rendered text") from e
        except OSError as e:
            raise OutputError(self._failure(e, stage)) from e
        finally:
            _remove(stage)  # the old tree after a swap, else the unfinished new one
        _sync_folder(self.path.parent)  # the swap itself, once it is done
        return digests

    def _fill(self, stage: Path, new: Mapping[str, str]) -> dict[str, str]:
        """The new tree in the stage, and each file's digest. Each file is encoded as it is
        written, not all first: a second copy of a large tree would raise the peak memory."""
        digests: dict[str, str] = {}
        made = {""} | set(self.folders)
        for folder in self.folders:
            if folder:
                (stage / folder).mkdir(0o755)
        for relative in self.others:
            if relative not in new:
                _link(self.path / relative, stage / relative)
        for relative, text in new.items():
            data = text.encode("utf-8")
            digests[relative] = hashlib.sha256(data).hexdigest()
            if self.owned.get(relative) == text:
                _link(self.path / relative, stage / relative)
            else:
                _write(stage, relative, data, made)
        removed = [p for p in self.owned if p not in new]
        _prune(stage, {a for p in removed for a in _ancestors(p)})
        for folder, mode in sorted(self.folders.items(), reverse=True):
            if (stage / folder).is_dir():
                (stage / folder).chmod(mode)  # last: a read-only folder is filled first
        return digests

    def _failure(self, error: OSError, stage: Path) -> str:
        where = Path(error.filename or stage)
        inside = where.is_relative_to(stage) and where != stage
        shown = f"{self.label}/{where.relative_to(stage).as_posix()}" if inside else self.label
        reason = {
            errno.ENOTDIR: "a file stands where tasgen needs a folder",
            errno.EISDIR: "a folder stands where tasgen writes a file",
        }.get(error.errno or 0, error.strerror or str(error))
        return f"cannot write {shown}: {reason}; {self.label} was left as it was"


@contextmanager
def opened(
    out_dir: Path,
    label: str,
    inventory: Path,
    *,
    create: bool = True,
    on_wait: Callable[[], None] = lambda: None,
) -> Iterator[OutputTree]:
    """rendered/ read under an exclusive lock held until the block ends; leftovers of
    interrupted renders are removed first. Without ``create`` (check) a missing folder is
    read as empty and nothing is made."""
    path, inventory = _resolved(out_dir, label), _resolved(inventory, label)
    if inventory.is_relative_to(path):
        raise OutputError(
            f"{label} holds the inventory; tasgen replaces {label} whole, give it its own folder"
        )
    if path.is_relative_to(inventory):
        # every file under the inventory is read as inventory: the next validate would fail
        raise OutputError(f"{label} is inside the inventory folder; give it a folder of its own beside it")
    if not create and not path.parent.is_dir():
        yield OutputTree(path, label)
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError as e:
        raise OutputError(f"cannot make {label}: {e.filename} is not a folder") from e
    except OSError as e:
        raise OutputError(f"cannot make {label}: {e.strerror}") from e
    with _locked(path.parent, on_wait):
        try:
            _recover(path)
            tree = _read(path, label)
        except OSError as e:
            raise OutputError(f"cannot read {label}: {e.strerror} ({e.filename})") from e
        yield tree


def _resolved(path: Path, label: str) -> Path:
    try:
        return path.resolve()
    except (RuntimeError, OSError) as e:  # Python 3.11 raises RuntimeError on a link loop
        raise OutputError(f"cannot find {label}: a link on its way loops") from e


@contextmanager
def _locked(folder: Path, on_wait: Callable[[], None]) -> Iterator[None]:
    try:
        handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        raise OutputError(f"cannot open {folder}: {e.strerror}") from e
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait()
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)  # closing drops the lock


def _recover(path: Path) -> None:
    """Remove what interrupted renders left beside rendered/; a complete tree that a
    two-step swap left without its rendered/ is rolled forward first."""
    prefix = f".{path.name}.tasgen-"
    siblings = sorted(path.parent / n for n in os.listdir(path.parent) if n.startswith(prefix))
    ready = [s for s in siblings if s.name.startswith(f".{path.name}.{_READY}-")]
    if ready and not os.path.lexists(path):
        ready[-1].rename(path)
    for sibling in siblings:
        _remove(sibling)


def _read(path: Path, label: str) -> OutputTree:
    tree = OutputTree(path, label)
    if not os.path.lexists(path):
        return tree
    if not path.is_dir():
        raise OutputError(f"{label} is not a folder")
    info = path.stat()
    tree.folders[""] = stat.S_IMODE(info.st_mode)
    for folder, names in _walk(path, label):
        for name in names:
            _classify(tree, f"{folder}/{name}".lstrip("/"), info.st_dev)
    return tree


def _walk(path: Path, label: str) -> Iterator[tuple[str, list[str]]]:
    """(relative folder, its entries), without following symlinks."""
    pending = [""]
    while pending:
        folder = pending.pop()
        try:
            names = sorted(os.listdir(path / folder))
        except OSError as e:
            raise OutputError(f"cannot read {label}/{folder}: {e.strerror}") from e
        yield folder, names
        pending += [f"{folder}/{n}".lstrip("/") for n in names if _is_folder(path / folder / n)]


def _is_folder(path: Path) -> bool:
    return stat.S_ISDIR(os.lstat(path).st_mode)


def _classify(tree: OutputTree, relative: str, device: int) -> None:
    info = os.lstat(tree.path / relative)
    if stat.S_ISDIR(info.st_mode):
        if info.st_dev != device:
            raise OutputError(f"{tree.label}/{relative} is a mount point; rendered/ must be one filesystem")
        tree.folders[relative] = stat.S_IMODE(info.st_mode)
    elif _is_old_stage(tree.path / relative, info.st_mode):
        tree.litter.append(relative)
    elif not (stat.S_ISREG(info.st_mode) and relative.endswith(".yaml") and _owned(tree, relative)):
        tree.others.append(relative)


def _owned(tree: OutputTree, relative: str) -> bool:
    """Read a file tasgen wrote (its header says so) into ``tree.owned``."""
    try:
        data = (tree.path / relative).read_bytes()
        text = data.decode("utf-8") if data.startswith(_HEADER) else None
    except (OSError, UnicodeDecodeError):
        return False  # not ours to read: kept as any other file
    if text is not None:
        tree.owned[relative] = text
    return text is not None


def _is_old_stage(path: Path, mode: int) -> bool:
    """``.<name>.yaml.<8 random>`` that holds tasgen's header, or the start of it (a write
    killed early): a staging file of a tasgen before the whole-tree swap. A person's file of
    such a name (a backup, ``.values.yaml.20261201``) is theirs, and is kept."""
    stem, _, suffix = path.name.rpartition(".")
    if not (path.name.startswith(".") and stem.endswith(".yaml") and len(suffix) == _OLD_STAGE_SUFFIX):
        return False
    try:
        with path.open("rb") as stream:
            head = stream.read(len(_HEADER)) if stat.S_ISREG(mode) else b"-"
    except OSError:
        return False
    return _HEADER.startswith(head)


def _link(source: Path, target: Path) -> None:
    """The same file in the new tree: no bytes copied, mtime kept (git need not rehash)."""
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError:
        # Hard links are not everywhere (some FUSE filesystems); a copy is the same file.
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copy2(source, target, follow_symlinks=False)


def _write(stage: Path, relative: str, data: bytes, made: set[str]) -> None:
    _folders_for(stage, relative, made)
    target = stage / relative
    if os.path.lexists(target):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target))
    handle = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.fchmod(handle, 0o644)  # whatever the umask: rendered/ is shared, like a checkout
        view = memoryview(data)
        while view:
            view = view[os.write(handle, view) :]
    finally:
        os.close(handle)


def _folders_for(stage: Path, relative: str, made: set[str]) -> None:
    """Create the folders above a new file; what stands in their way is an error, never a
    path to follow (a symlinked folder would lead the write outside the stage)."""
    for folder in reversed(_ancestors(relative)):
        if folder not in made:
            if os.path.lexists(stage / folder):
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(stage / folder))
            (stage / folder).mkdir(0o755)
            made.add(folder)


def _prune(stage: Path, folders: set[str]) -> None:
    """Remove folders left empty by removed files, deepest first (git keeps no empty folders)."""
    for folder in sorted(folders, key=lambda f: f.count("/"), reverse=True):
        if (stage / folder).is_dir() and not any((stage / folder).iterdir()):
            (stage / folder).rmdir()


def _ancestors(relative: str) -> list[str]:
    """The folders above a path, nearest first, without rendered/ itself."""
    parts = relative.split("/")[:-1]
    return ["/".join(parts[:depth]) for depth in range(len(parts), 0, -1)]


_AT_FDCWD, _RENAME_EXCHANGE = -100, 2
_libc = ctypes.CDLL(None, use_errno=True)
_renameat2 = getattr(_libc, "renameat2", None)
_syncfs = getattr(_libc, "syncfs", None)


def _durable(stage: Path) -> None:
    """The stage's files and folders on disk before the swap makes them rendered/. Without
    it ext4 (delayed allocation) may commit the rename before the data, and a power cut right
    after a render leaves empty files in rendered/. One syncfs of the stage's filesystem,
    much cheaper than an fsync of each file and folder (docs/explanation/guarantees.md).
    Where syncfs is missing, sync() does the same for every filesystem."""
    if _syncfs is None:
        os.sync()
        return
    handle = os.open(stage, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if _syncfs(handle) != 0:  # Linux 5.8+ reports a failed writeback here
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), str(stage))
    finally:
        os.close(handle)


def _sync_folder(folder: Path) -> None:
    """The renames of the swap on disk (they are entries of the folder that holds rendered/).
    Best effort: the new tree is in place whatever happens here, and some filesystems refuse
    an fsync of a folder; the next commit of the filesystem's journal records the renames."""
    try:
        handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def _swap(stage: Path, path: Path) -> None:
    """Put the stage at ``path``; afterwards ``stage`` holds the old tree (if any)."""
    if not os.path.lexists(path):
        stage.rename(path)
        return
    if _renameat2 is not None:
        done = _renameat2(_AT_FDCWD, bytes(stage), _AT_FDCWD, bytes(path), _RENAME_EXCHANGE)
        if done == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            raise OSError(code, os.strerror(code), str(path))
    _swap_in_two_steps(stage, path)


def _swap_in_two_steps(stage: Path, path: Path) -> None:
    """Without RENAME_EXCHANGE: mark the stage complete, move rendered/ aside, move the
    stage in. A kill in between is rolled forward by the next command (:func:`_recover`)."""
    ready = stage.with_name(stage.name.replace(_STAGE, _READY))
    stage.rename(ready)
    try:
        path.rename(stage)
    except OSError:
        _remove(ready)
        raise
    try:
        ready.rename(path)
    except OSError:
        stage.rename(path)  # put the old tree back
        _remove(ready)
        raise


def _remove(path: Path) -> None:
    """Delete a tree, also below folders without write permission (a read-only folder of the
    old rendered/ must not leave its tree behind); what still fails is left for the next run."""

    def writable_and_again(function: Callable[[str], object], name: str, _: object) -> None:
        try:
            os.chmod(os.path.dirname(name), 0o700)
            function(name)
        except OSError:
            pass

    shutil.rmtree(path, onerror=writable_and_again)
