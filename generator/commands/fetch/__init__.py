"""`tasgen fetch`: poll webhook TopologySources and commit their answers to snapshotPath.

Each answer is validated exactly as ``tasgen validate`` validates a committed snapshot: the
inventory's files are compiled with the answer in place of the snapshot file (the loader
takes (path, bytes) pairs for this), so the schema and every rule run against the current
inventory, with positions inside the answer. An invalid answer leaves the committed file as
it was; a valid one is written in its canonical form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path

from ...load.files import InputFile, display_path, read_inventory
from ...load.locate import locate
from ...model import Level, Problem
from ...parse import ParseError, parse_text
from ...pipeline import compile_inventory
from ...util.gc import no_cycle_collection
from . import snapshotfile
from .credentials import CredentialError, SecretReader, of_webhook
from .sources import Hook, ca_pem, target, webhook_sources

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_TIMEOUT = 30.0


class UnknownSource(Exception):
    """A source named on the command line is not a webhook source of the inventory."""


class Status(StrEnum):
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    FAILED = "failed"


@dataclass(frozen=True)
class Options:
    secrets: SecretReader
    timeout: float = DEFAULT_TIMEOUT
    max_bytes: int = DEFAULT_MAX_BYTES


@dataclass
class Outcome:
    source: str
    status: Status
    revision: str | None = None
    reason: str = ""  # why it failed
    problems: list[Problem] = field(default_factory=list)


@dataclass
class _Polled:
    """A source whose endpoint answered with a new body, not yet judged."""

    hook: Hook
    committed: snapshotfile.Committed
    body: bytes
    etag: str | None

    @property
    def shown(self) -> str:
        return f"{display_path(self.committed.path)} (answer of {self.hook.url})"


def fetch(inventory: Path, names: tuple[str, ...], options: Options, now: datetime) -> list[Outcome]:
    with no_cycle_collection():
        return _fetch(inventory, names, options, now)


def _fetch(inventory: Path, names: tuple[str, ...], options: Options, now: datetime) -> list[Outcome]:
    files = read_inventory(inventory)
    hooks = webhook_sources(files)
    unknown = sorted(set(names) - set(hooks))
    if unknown:
        known = ", ".join(sorted(hooks)) or "none"
        raise UnknownSource(f"no webhook source named {', '.join(unknown)} (webhook sources: {known})")
    outcomes: dict[str, Outcome] = {}
    polled: list[_Polled] = []
    for name in sorted(set(names) or hooks):
        result = _poll(inventory, hooks[name], options, files)
        if isinstance(result, _Polled):
            polled.append(result)
        else:
            outcomes[name] = result
    outcomes.update(_admit(files, polled, now))
    return [outcomes[name] for name in sorted(outcomes)]


def _poll(inventory: Path, hook: Hook, options: Options, files: list[InputFile]) -> Outcome | _Polled:
    if hook.findings:
        problems = locate(hook.findings, {f.shown: _text(f) for f in files})
        return Outcome(hook.name, Status.FAILED, reason="its TopologySource is invalid", problems=problems)
    from . import https  # noqa: PLC0415 - http.client: slows every render's start

    try:
        committed = snapshotfile.Committed.read(target(inventory, hook), hook.url)
        credential = of_webhook(options.secrets, hook.webhook)
        tls = https.tls_context(ca_pem(hook.webhook))
        request = https.Request(hook.url, credential, tls, options.timeout, options.max_bytes, committed.etag)
        answer = https.get(request)
    except (https.FetchError, CredentialError, ValueError) as e:
        return Outcome(hook.name, Status.FAILED, reason=str(e))
    if answer.body is None:  # a 304: only ever to a request carrying the committed file's ETag
        return Outcome(hook.name, Status.UNCHANGED, _revision(committed.text, committed.path.suffix))
    return _Polled(hook, committed, answer.body, answer.etag)


def _admit(files: list[InputFile], polled: list[_Polled], now: datetime) -> dict[str, Outcome]:
    """Judge the answers together (one may only be valid beside another, e.g. the first
    fetch of two new sources); answers with problems of their own are dropped and the rest
    judged again, until what is left is valid or nothing is left."""
    outcomes: dict[str, Outcome] = {}
    while polled:
        problems = _problems(files, polled, now)
        own = {p.hook.name: [x for x in problems if x.path == p.shown] for p in polled}
        bad = {name for name, found in own.items() if any(x.level is Level.ERROR for x in found)}
        if not bad:
            outcomes.update(_settle(polled, own, [x for x in problems if x.level is Level.ERROR]))
            break
        for p in (p for p in polled if p.hook.name in bad):
            outcomes[p.hook.name] = _failed(p, "the answer is not a valid snapshot", own[p.hook.name])
        polled = [p for p in polled if p.hook.name not in bad]
    return outcomes


def _settle(
    polled: list[_Polled], own: dict[str, list[Problem]], others: list[Problem]
) -> dict[str, Outcome]:
    """Answers without problems of their own: written, unless the inventory has errors
    elsewhere (then no answer can be shown valid, and those errors are the reason)."""
    if others:
        reason = "the inventory has errors with this answer (tasgen validate)"
        return {p.hook.name: _failed(p, reason, others) for p in polled}
    return {p.hook.name: _commit(p, own[p.hook.name]) for p in polled}


def _problems(files: list[InputFile], polled: list[_Polled], now: datetime) -> list[Problem]:
    answers = {p.hook.relative: InputFile(p.hook.relative, p.shown, p.body) for p in polled}
    substituted = [answers.pop(f.relative, f) for f in files]
    compiled = compile_inventory([*substituted, *answers.values()], now, node_features=False)
    return compiled.problems()


def _commit(polled: _Polled, warnings: list[Problem]) -> Outcome:
    suffix = polled.committed.path.suffix
    data = parse_text(polled.body.decode("utf-8"), json_syntax=suffix == ".json")[0]
    text = snapshotfile.canonical(data, suffix)
    revision = str(data["revision"])
    try:
        if text == polled.committed.text:
            polled.committed.keep_etag(polled.etag)
            return Outcome(polled.hook.name, Status.UNCHANGED, revision, problems=warnings)
        polled.committed.write(text, polled.etag)
    except OSError as e:
        return _failed(polled, f"cannot write {polled.committed.path}: {e.strerror or e}", warnings)
    return Outcome(polled.hook.name, Status.UPDATED, revision, problems=warnings)


def _failed(polled: _Polled, reason: str, problems: list[Problem]) -> Outcome:
    return Outcome(polled.hook.name, Status.FAILED, reason=reason, problems=problems)


def _revision(text: str | None, suffix: str) -> str | None:
    try:
        data = parse_text(text, json_syntax=suffix == ".json")[0] if text else None
    except ParseError:  # only for the summary line; validate reports it
        return None
    return str(data.get("revision")) if isinstance(data, dict) and "revision" in data else None


def _text(file: InputFile) -> str:
    return file.data.decode("utf-8", errors="replace") if file.data is not None else ""
