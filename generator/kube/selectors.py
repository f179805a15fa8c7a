"""Label selectors and node selector terms, matched as Kubernetes matches them
(``labels.Selector`` of a ``metav1.LabelSelector``; ``nodeaffinity.NodeSelector``)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping

#: one requirement: key, operator, values (In, NotIn, Exists, DoesNotExist; Gt and Lt in node
#: selector terms only)
Expression = tuple[str, str, tuple[str, ...]]
#: what a requirement may be given as (a model's values may be a set)
Requirement = tuple[str, str, Collection[str]]

#: what Go's strconv.ParseInt takes (Python's int() also takes spaces and underscores)
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT64 = 2**63


def holds(expression: Requirement, labels: Mapping[str, str]) -> bool:
    """Whether one requirement holds for ``labels``; an unknown operator holds for none."""
    key, operator, values = expression
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        have, limit = _int64(labels[key]), _int64(next(iter(values)))
        if have is None or limit is None:
            return False
        return have > limit if operator == "Gt" else have < limit
    return False


def _int64(text: str) -> int | None:
    if not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if -_INT64 <= value < _INT64 else None


def selects(
    match_labels: Mapping[str, str] | Iterable[tuple[str, str]],
    expressions: Iterable[Requirement],
    labels: Mapping[str, str],
    *,
    only: Collection[str] | None = None,
) -> bool:
    """A LabelSelector: every matchLabels pair and every expression holds (no term selects
    everything). With ``only``, the terms on keys outside it are not judged: they hold (for
    labels known only in part)."""
    pairs = match_labels.items() if isinstance(match_labels, Mapping) else match_labels
    for key, value in pairs:
        if (only is None or key in only) and (key not in labels or labels[key] != value):
            return False
    return all(holds(e, labels) for e in expressions if only is None or e[0] in only)


def selects_raw(
    selector: Mapping[str, object], labels: Mapping[str, str], *, only: Collection[str] | None = None
) -> bool:
    """:func:`selects` on a LabelSelector as written (``matchLabels``, ``matchExpressions``)."""
    return selects(
        match_labels_of(selector), expressions_of(selector.get("matchExpressions")), labels, only=only
    )


def match_labels_of(selector: Mapping[str, object]) -> dict[str, str]:
    raw = selector.get("matchLabels")
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}


def expressions_of(raw: object) -> tuple[Expression, ...]:
    """The requirements of a written ``matchExpressions`` list."""
    if not isinstance(raw, list):
        return ()
    out = []
    for e in raw:
        if isinstance(e, Mapping):
            values = e.get("values")
            out.append(
                (
                    str(e.get("key")),
                    str(e.get("operator")),
                    tuple(str(v) for v in values) if isinstance(values, list) else (),
                )
            )
    return tuple(out)


def terms_match(terms: Iterable[Iterable[Requirement]], labels: Mapping[str, str]) -> bool:
    """A node selector's terms (required node affinity): any term whose requirements all hold;
    an empty term matches nothing, and so do no terms."""
    for term in terms:
        requirements = tuple(term)
        if requirements and all(holds(e, labels) for e in requirements):
            return True
    return False
