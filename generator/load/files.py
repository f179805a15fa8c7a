"""Read the inventory folder: every YAML and JSON file, every document, as plain data.

Each file is parsed by the one guarded reader (:mod:`generator.parse`); positions are looked
up later, and only for files that have a problem (see :mod:`generator.load.positions`). Parse
failures are data: they become findings, and every other file is still read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..model import Document, Finding, Where
from ..parse import ParseError, parse_text
from ..rules import Rule
from ..rules.load import DOCUMENT_SHAPE, FILE_UNREADABLE
from . import discovery

SUFFIXES = (".yaml", ".yml", ".json")


@dataclass
class LoadedFile:
    """One file of the inventory: its documents, or the findings that kept it from loading."""

    path: str  # as shown to users: relative to the current directory when possible
    relative: str  # relative to the inventory folder (how snapshotPath names it)
    text: str
    documents: list[Document] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


@dataclass(frozen=True)
class InputFile:
    """One inventory file as bytes: what the loader parses, wherever the bytes came from (the
    working tree, or a git revision for ``tasgen plan``) - the loader itself opens nothing."""

    relative: str  # relative to the inventory folder, POSIX (how snapshotPath names it)
    shown: str  # as shown to users in problems
    data: bytes | None  # None: could not be read (``error`` says why)
    error: str | None = None
    rule: Rule = FILE_UNREADABLE  # of the problem when ``data`` is None


def read_inventory(root: Path) -> list[InputFile]:
    """The inventory folder's files, read once, and an entry for each file or folder that
    could not be read (see :mod:`generator.load.discovery` for what is followed)."""
    return [_read(entry) for entry in discovery.discover(root, SUFFIXES)]


def _read(entry: discovery.Entry) -> InputFile:
    shown = display_path(entry.path)
    if entry.error is not None or entry.target is None:
        return InputFile(entry.relative, shown, None, entry.error, entry.rule)
    try:
        return InputFile(entry.relative, shown, entry.target.read_bytes())
    except OSError as e:
        return InputFile(entry.relative, shown, None, f"cannot read the file: {e.strerror or e}")


def display_path(path: Path) -> str:
    """The path users see in problems: relative to the working directory when below it. Links
    are not resolved (a linked file is shown where the inventory has it)."""
    absolute = Path(os.path.abspath(path))
    for cwd in (Path.cwd(), Path.cwd().resolve()):
        if absolute.is_relative_to(cwd):
            return absolute.relative_to(cwd).as_posix()
    return path.as_posix()


def load_file(file: InputFile) -> LoadedFile:
    shown, relative = file.shown, file.relative
    if file.data is None:
        finding = file.rule(Where(shown, line_col=(1, 1)), file.error or "cannot read the file")
        return LoadedFile(shown, relative, "", findings=[finding])
    try:
        text = file.data.decode("utf-8")
    except UnicodeDecodeError:
        finding = FILE_UNREADABLE(Where(shown, line_col=(1, 1)), "cannot read the file: not UTF-8 text")
        return LoadedFile(shown, relative, "", findings=[finding])
    loaded = LoadedFile(shown, relative, text)
    try:
        data = parse_text(text, json_syntax=relative.endswith(".json"))
    except ParseError as e:
        loaded.findings.append(e.rule(Where(shown, line_col=e.position), e.message))
        return loaded
    for index, body in enumerate(data):
        if isinstance(body, dict):
            loaded.documents.append(Document(shown, index, body, text))
        elif body is not None:  # an empty document (a lone "---") is allowed
            message = "every document must be a mapping with apiVersion and kind"
            loaded.findings.append(DOCUMENT_SHAPE(Where(shown, index), message))
    return loaded


def load_files(files: list[InputFile]) -> list[LoadedFile]:
    return [load_file(file) for file in files]
