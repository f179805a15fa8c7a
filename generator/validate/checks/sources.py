"""Rules on TopologySource definitions themselves."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath

from ...model import HOSTNAME_KEY, PROFILE_KEY, PROFILES_FEATURE_NAME, Selector, Source, Where
from ...rules import Hit, Rule
from ...rules.semantic import (
    SNAPSHOT_PATH_SHARED,
    SOURCE_LEVELS,
    SOURCE_NAME,
    SOURCE_SELECTOR,
    SOURCE_TYPE,
    WEBHOOK_CREDENTIALS,
)
from ...sourcetypes import SOURCE_TYPES, WEBHOOK, present
from ...sourcetypes import WEBHOOK_CREDENTIALS as CREDENTIAL_REFS
from ..labels import label_key_error, label_value_error, level_refusal
from .base import Check, Context

_KEYS = ", ".join(t.key for t in SOURCE_TYPES)


def _source_type(ctx: Context) -> Iterable[Hit]:
    for src in ctx.inventory.sources.values():
        found = present(src.spec)
        if len(found) != 1:
            named = ", ".join(t.key for t in found) or "none"
            message = f"a TopologySource has exactly one of {_KEYS} (found: {named})"
            yield Hit(src.where.at("spec"), message)


def _source_name(ctx: Context) -> Iterable[Hit]:
    """A source's NodeFeatures go to nodefeatures-<name>.yaml of each labels folder, beside
    the profiles' nodefeatures-profiles.yaml: a source named so would share that file, and
    one of the two would be lost without a word."""
    if PROFILES_FEATURE_NAME in ctx.inventory.sources:
        src = ctx.inventory.sources[PROFILES_FEATURE_NAME]
        message = (
            f"a TopologySource may not be named {PROFILES_FEATURE_NAME!r}: its NodeFeatures would "
            f"share nodefeatures-{PROFILES_FEATURE_NAME}.yaml with the profiles'; choose another name"
        )
        yield Hit(src.where.at("metadata", "name"), message)


def _shared_snapshot_path(ctx: Context) -> Iterable[Hit]:
    """Two fetched sources writing one snapshot file: each fetch would overwrite the other's
    answer, and both be reported as updated."""
    first: dict[PurePosixPath, str] = {}
    for name in sorted(ctx.inventory.sources):
        src = ctx.inventory.sources[name]
        path = src.type.snapshot_file(src.spec)
        if path is None:
            continue
        other = first.setdefault(PurePosixPath(path), name)
        if other != name:
            message = f"snapshotPath {path!r} is also source {other!r}'s; each source needs its own file"
            yield Hit(src.where.at("spec", src.type.key, "snapshotPath"), message)


def _source_levels(ctx: Context) -> Iterable[Hit]:
    admin = ctx.inventory.settings.admin_label_prefix
    for src in ctx.inventory.sources.values():
        seen: set[str] = set()
        for i, key in enumerate(src.declared_levels):
            message = _level_problem(key, seen, admin if src.writes else None, src.writes)
            seen.add(key)
            if message:
                yield Hit(src.where.at("spec", "levels", i), message)


#: Kueue's bound on a Topology level's nodeLabel (its CRD's maxLength)
MAX_LEVEL_KEY = 316


def _level_problem(key: str, seen: set[str], admin: str | None, writes: bool) -> str | None:
    if key in seen:
        return f"level {key!r} is listed twice; each level is one label key"
    if key == HOSTNAME_KEY:
        return f"{HOSTNAME_KEY} is always appended as the finest level; do not list it"
    if key == PROFILE_KEY:
        return f"{PROFILE_KEY} is generated from the levels and cannot be one"
    syntax = label_key_error(key)
    if syntax:
        return f"level {key!r} is not a label key: {syntax}"
    if len(key) > MAX_LEVEL_KEY:  # a valid key may have 317 characters
        return f"level key of {len(key)} characters: Kueue's Topology takes at most {MAX_LEVEL_KEY}"
    if writes:
        refusal = level_refusal(key, admin)
        if refusal:
            return (
                f"a writing source cannot use level {key!r}: {refusal}; "
                "its only read-only levels may be topology.kubernetes.io/region and zone"
            )
    return None


def selector_problems(src: Source) -> list[Hit]:
    """Label syntax in a source's nodeSelector."""
    return selector_hits(src.selector, src.where.at("spec", "nodeSelector"))


def selector_hits(selector: Selector, where: Where) -> list[Hit]:
    """Label syntax in a label selector (the operators' values are checked by the schema)."""
    found = [
        Hit(where.key_of("matchLabels", key), f"{key}={value!r}: {problem}")
        for key, value in selector.match_labels
        if (problem := label_key_error(key) or label_value_error(value))
    ]
    for i, req in enumerate(selector.expressions):
        bad = [f"{v!r}: {label_value_error(v)}" for v in sorted(req.values) if label_value_error(v)]
        problem = label_key_error(req.key) or (bad[0] if bad else None)
        if problem:
            found.append(Hit(where.at("matchExpressions", i), f"{req.key}: {problem}"))
    return found


def _source_selector(ctx: Context) -> Iterable[Hit]:
    for src in ctx.inventory.sources.values():
        yield from selector_problems(src)


def _webhook_credentials(ctx: Context) -> Iterable[Hit]:
    for src in ctx.inventory.sources.values():
        hook = src.spec.get(WEBHOOK.key)
        if not isinstance(hook, dict):
            continue
        refs = [k for k in CREDENTIAL_REFS if k in hook]
        if len(refs) != 1:
            message = (
                "a webhook source names exactly one credential: bearerTokenSecretRef or "
                "clientCertificateSecretRef (the endpoint is trusted to receive it)"
            )
            yield Hit(src.where.at("spec", WEBHOOK.key), message)


CHECKS: tuple[tuple[Rule, Check], ...] = (
    (SOURCE_TYPE, _source_type),
    (SOURCE_NAME, _source_name),
    (SNAPSHOT_PATH_SHARED, _shared_snapshot_path),
    (SOURCE_LEVELS, _source_levels),
    (SOURCE_SELECTOR, _source_selector),
    (WEBHOOK_CREDENTIALS, _webhook_credentials),
)
