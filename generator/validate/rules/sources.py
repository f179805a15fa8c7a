"""Rules on TopologySource definitions themselves."""

from __future__ import annotations

from collections.abc import Iterable

from generator.model import HOSTNAME_KEY, PROFILE_KEY, Finding, Source
from generator.sourcetypes import SOURCE_TYPES, WEBHOOK, WEBHOOK_CREDENTIALS, present
from generator.validate.labels import label_key_error, label_value_error, level_refusal
from generator.validate.rules.base import Context, Rule

_KEYS = ", ".join(t.key for t in SOURCE_TYPES)


def _source_type(ctx: Context) -> Iterable[Finding]:
    for src in ctx.inventory.sources.values():
        found = present(src.spec)
        if len(found) != 1:
            named = ", ".join(t.key for t in found) or "none"
            message = f"a TopologySource has exactly one of {_KEYS} (found: {named})"
            yield Finding(src.where.at("spec"), "source-type", message)


def _source_levels(ctx: Context) -> Iterable[Finding]:
    admin = ctx.inventory.settings.admin_label_prefix
    for src in ctx.inventory.sources.values():
        seen: set[str] = set()
        for i, key in enumerate(src.declared_levels):
            message = _level_problem(key, seen, admin if src.writes else None, src.writes)
            seen.add(key)
            if message:
                yield Finding(src.where.at("spec", "levels", i), "source-levels", message)


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
    if writes:
        refusal = level_refusal(key, admin)
        if refusal:
            return (
                f"a writing source cannot use level {key!r}: {refusal}; "
                "its only read-only levels may be topology.kubernetes.io/region and zone"
            )
    return None


def selector_problems(src: Source) -> list[Finding]:
    """Label syntax in a nodeSelector (the operators' values are checked by the schema)."""
    where = src.where.at("spec", "nodeSelector")
    found = [
        Finding(where.key_of("matchLabels", key), "source-selector", f"{key}={value!r}: {problem}")
        for key, value in src.selector.match_labels
        if (problem := label_key_error(key) or label_value_error(value))
    ]
    for i, req in enumerate(src.selector.expressions):
        bad = [f"{v!r}: {label_value_error(v)}" for v in sorted(req.values) if label_value_error(v)]
        problem = label_key_error(req.key) or (bad[0] if bad else None)
        if problem:
            found.append(Finding(where.at("matchExpressions", i), "source-selector", f"{req.key}: {problem}"))
    return found


def _source_selector(ctx: Context) -> Iterable[Finding]:
    for src in ctx.inventory.sources.values():
        yield from selector_problems(src)


def _webhook_credentials(ctx: Context) -> Iterable[Finding]:
    for src in ctx.inventory.sources.values():
        hook = src.spec.get(WEBHOOK.key)
        if not isinstance(hook, dict):
            continue
        refs = [k for k in WEBHOOK_CREDENTIALS if k in hook]
        if len(refs) != 1:
            message = (
                "a webhook source names exactly one credential: bearerTokenSecretRef or "
                "clientCertificateSecretRef (the endpoint is trusted to receive it)"
            )
            yield Finding(src.where.at("spec", WEBHOOK.key), "webhook-credentials", message)


RULES = (
    Rule("source-type", f"A TopologySource has exactly one of {_KEYS}.", _source_type),
    Rule(
        "source-levels",
        "Levels are unique label keys, never the hostname or profile key; a writing "
        "source's levels are writable keys or the cloud's region/zone.",
        _source_levels,
    ),
    Rule(
        "source-selector",
        "nodeSelector uses valid label keys and values.",
        _source_selector,
    ),
    Rule(
        "webhook-credentials", "A webhook source names exactly one credential secret.", _webhook_credentials
    ),
)
