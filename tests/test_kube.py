"""The Kubernetes meanings of generator/kube/, each against a plain oracle written here from
Kubernetes' definitions (the oracles call nothing of generator.kube)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasgen.kube import assignments, quantities, selectors, taints
from tasgen.model import Requirement, Selector

# --- quantities ---------------------------------------------------------------------------

_SUFFIXES: dict[str, Fraction] = {
    "": Fraction(1),
    "m": Fraction(1, 1000),
    "k": Fraction(1000),
    "M": Fraction(1000**2),
    "G": Fraction(1000**3),
    "T": Fraction(1000**4),
    "P": Fraction(1000**5),
    "E": Fraction(1000**6),
    "Ki": Fraction(1024),
    "Mi": Fraction(1024**2),
    "Gi": Fraction(1024**3),
    "Ti": Fraction(1024**4),
    "Pi": Fraction(1024**5),
    "Ei": Fraction(1024**6),
}
_DIGITS = "0123456789"


def oracle_value(text: str) -> Fraction | None:
    """A quantity's exact value by Kubernetes' grammar (sign, digits with at most one point,
    then a binary or decimal suffix or an exponent), None when it is not one."""
    rest, sign = text, 1
    if rest[:1] in ("+", "-"):
        sign, rest = (-1 if rest[0] == "-" else 1), rest[1:]
    number = ""
    while rest and (rest[0] in _DIGITS or (rest[0] == "." and "." not in number)):
        number, rest = number + rest[0], rest[1:]
    if number in ("", "."):
        return None
    whole, _, fraction = number.partition(".")
    value = Fraction(int(whole or "0")) + (Fraction(int(fraction), 10 ** len(fraction)) if fraction else 0)
    if rest in _SUFFIXES:
        return sign * value * _SUFFIXES[rest]
    if rest[:1] in ("e", "E"):
        exponent = rest[1:]
        body = exponent[1:] if exponent[:1] in ("+", "-") else exponent
        if body and all(c in _DIGITS for c in body) and abs(int(exponent)) < 400:
            return sign * value * Fraction(10) ** int(exponent)
    return None


NUMBERS = st.one_of(
    st.integers(0, 10**12).map(str),
    st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)).map(lambda p: f"{p[0]}.{p[1]}"),
    st.integers(0, 999).map(lambda n: f".{n}"),
    st.integers(0, 999).map(lambda n: f"{n}."),
)
SUFFIX = st.one_of(st.sampled_from(sorted(_SUFFIXES)), st.integers(-30, 30).map(lambda e: f"e{e}"))
QUANTITIES = st.builds(lambda s, n, x: s + n + x, st.sampled_from(["", "+", "-"]), NUMBERS, SUFFIX)
TEXTS = st.one_of(
    QUANTITIES,
    st.text(alphabet="0123456789.+-eEkKmMGiTP xu_٣", max_size=8),
    st.sampled_from(["8GPU", "eight", "NaN", "Infinity", "1_000", "", " 1", "1 ", "0x10"]),
)


@settings(max_examples=400)
@given(TEXTS)
def test_a_quantity_parses_to_its_value_by_the_grammar(text: str) -> None:
    expected = oracle_value(text)
    if expected is None:
        with pytest.raises(ValueError):
            quantities.parse(text)
        assert not quantities.is_quantity(text)
    else:
        assert Fraction(quantities.parse(text)) == expected
        assert quantities.is_zero(text) is (expected == 0)


@settings(max_examples=300)
@given(TEXTS, st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]))
def test_a_quantity_error_is_given_exactly_where_kubernetes_would_refuse_the_value(
    text: str, resource: str
) -> None:
    expected = oracle_value(text)
    scale = 1000 if resource == "cpu" else 1
    fine = expected is not None and len(text) <= 64 and 0 <= expected * scale <= 2**63 - 1
    assert (quantities.quantity_error(text, resource) is None) is fine


@pytest.mark.parametrize(
    ("value", "zero"),
    [
        ("0", True),
        (0, True),
        (0.0, True),
        ("0m", True),
        ("0Gi", True),
        ("0.0", True),
        ("-0", True),
        (None, False),  # absence is not a quantity: callers that read it as zero say so
        (False, False),
        ("1", False),
        ("500m", False),
        ("1Ki", False),
        ("junk", False),
        ("0junk", False),
        ("1e3", False),
    ],
)
def test_zero_is_a_quantity_whose_value_is_zero(value: Any, zero: bool) -> None:
    assert quantities.is_zero(value) is zero


@settings(max_examples=300)
@given(QUANTITIES, st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]))
def test_kueue_counts_a_request_in_whole_units_rounded_up(text: str, resource: str) -> None:
    value = oracle_value(text)
    assert value is not None
    expected = None if value < 0 else math.ceil(value * (1000 if resource == "cpu" else 1))
    assert quantities.kueue_units(resource, text) == expected


@settings(max_examples=400)
@given(
    st.one_of(
        st.integers(0, 5000), st.integers(0, 2**63 - 1), st.integers(0, 10**6).map(lambda n: n * 1024**3)
    ),
    st.sampled_from(["cpu", "memory", "hugepages-2Mi", "nvidia.com/gpu", "pods"]),
)
def test_kueue_text_is_the_canonical_quantity_of_the_units(value: int, resource: str) -> None:
    text = quantities.kueue_text(resource, value)
    parsed = oracle_value(text)
    scale = 1000 if resource == "cpu" else 1
    assert parsed is not None and parsed * scale == value
    number, suffix = re.fullmatch(r"(\d+)([a-zA-Z]*)", text).groups()  # type: ignore[union-attr]
    binary = resource in ("memory",) or resource.startswith("hugepages-")
    if binary and value >= 1024:
        assert suffix in ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
        assert suffix == "Ei" or int(number) % 1024 != 0  # the largest exact binary suffix
    else:
        assert suffix in ("", "m", "k", "M", "G", "T", "P", "E")
        assert suffix in ("m", "E") or int(number) % 1000 != 0 or value == 0


@settings(max_examples=300)
@given(
    st.integers(0, 2**63 - 1),
    st.sampled_from([1, 1000]),
    st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]),
)
def test_tasgen_quantity_text_reads_back_as_its_units(units: int, scale: int, resource: str) -> None:
    text = quantities.format_units(units, scale, resource)
    assert oracle_value(text) == Fraction(units, scale)


# --- selectors ----------------------------------------------------------------------------

KEYS = st.sampled_from(["a", "b", "c"])
VALUES = st.sampled_from(["x", "y", "1", "-3", "+2", "07", " 4", "1_0", "z9"])
LABELS = st.dictionaries(KEYS, VALUES, max_size=3)
OPERATORS = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"])
EXPRESSIONS = st.tuples(KEYS, OPERATORS, st.lists(VALUES, max_size=2).map(tuple))


def oracle_integer(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64)."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or any(c not in _DIGITS for c in body):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def oracle_requirement(key: str, operator: str, values: tuple[str, ...], labels: Mapping[str, str]) -> bool:
    value = labels.get(key)
    allowed = {
        "In": lambda: value is not None and value in values,
        "NotIn": lambda: value is None or value not in values,
        "Exists": lambda: value is not None,
        "DoesNotExist": lambda: value is None,
    }
    if operator in allowed:
        return allowed[operator]()
    if operator in ("Gt", "Lt") and value is not None and len(values) == 1:
        have, bound = oracle_integer(value), oracle_integer(values[0])
        if have is not None and bound is not None:
            return have > bound if operator == "Gt" else have < bound
    return False


@settings(max_examples=500)
@given(
    st.dictionaries(KEYS, VALUES, max_size=2),
    st.lists(EXPRESSIONS, max_size=3),
    LABELS,
    st.none() | st.sets(KEYS),
)
def test_a_label_selector_selects_when_every_term_holds(
    match: dict[str, str],
    expressions: list[tuple[str, str, tuple[str, ...]]],
    labels: dict[str, str],
    only: set[str] | None,
) -> None:
    judged = (lambda key: True) if only is None else (lambda key: key in only)
    expected = all(labels.get(k) == v for k, v in match.items() if judged(k)) and all(
        oracle_requirement(*e, labels) for e in expressions if judged(e[0])
    )
    assert selectors.selects(match, expressions, labels, only=only) is expected
    assert selectors.selects(sorted(match.items()), expressions, labels, only=only) is expected
    written = {
        "matchLabels": match,
        "matchExpressions": [{"key": k, "operator": o, "values": list(v)} for k, o, v in expressions],
    }
    assert selectors.selects_raw(written, labels, only=only) is expected


@settings(max_examples=300)
@given(
    st.dictionaries(KEYS, VALUES, max_size=2),
    st.lists(
        st.tuples(KEYS, st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]), st.sets(VALUES)),
        max_size=3,
    ),
    LABELS,
)
def test_the_inventory_selector_selects_as_kubernetes_does(
    match: dict[str, str], expressions: list[tuple[str, Any, set[str]]], labels: dict[str, str]
) -> None:
    selector = Selector(
        tuple(sorted(match.items())), tuple(Requirement(k, o, frozenset(v)) for k, o, v in expressions)
    )
    expected = all(labels.get(k) == v for k, v in match.items()) and all(
        oracle_requirement(k, o, tuple(v), labels) for k, o, v in expressions
    )
    assert selector.selects(labels) is expected


@settings(max_examples=400)
@given(st.lists(st.lists(EXPRESSIONS, max_size=2), max_size=3), LABELS)
def test_node_selector_terms_match_when_any_non_empty_term_holds(
    terms: list[list[tuple[str, str, tuple[str, ...]]]], labels: dict[str, str]
) -> None:
    expected = False
    for term in terms:
        if len(term) > 0 and all(oracle_requirement(*e, labels) for e in term):
            expected = True
    assert selectors.terms_match(terms, labels) is expected


# --- taints and tolerations ---------------------------------------------------------------

EFFECTS = st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"])
TAINTS = st.tuples(st.sampled_from(["k1", "k2"]), st.sampled_from(["", "v1", "v2"]), EFFECTS)
TOLERATIONS = st.fixed_dictionaries(
    {},
    optional={
        "key": st.sampled_from(["", "k1", "k2"]),
        "operator": st.sampled_from(["", "Equal", "Exists", "Bogus"]),
        "value": st.sampled_from(["", "v1", "v2"]),
        "effect": st.sampled_from(["", "NoSchedule", "PreferNoSchedule", "NoExecute"]),
    },
)


def oracle_tolerates(toleration: Mapping[str, str], taint: tuple[str, str, str]) -> bool:
    """corev1.Toleration.ToleratesTaint, step by step."""
    effect = toleration.get("effect", "")
    if effect != "" and effect != taint[2]:
        return False
    key = toleration.get("key", "")
    if key != "" and key != taint[0]:
        return False
    operator = toleration.get("operator", "")
    if operator in ("", "Equal"):
        return toleration.get("value", "") == taint[1]
    return operator == "Exists"


@settings(max_examples=500)
@given(TOLERATIONS, TAINTS)
def test_a_toleration_tolerates_as_kubernetes_says(
    toleration: dict[str, str], taint: tuple[str, str, str]
) -> None:
    assert taints.tolerates(toleration, taint) is oracle_tolerates(toleration, taint)


@settings(max_examples=400)
@given(st.lists(TAINTS, max_size=4), st.lists(TOLERATIONS, max_size=3))
def test_the_untolerated_taint_is_the_first_blocking_one_no_toleration_covers(
    node_taints: list[tuple[str, str, str]], tolerations: list[dict[str, str]]
) -> None:
    expected = next(
        (
            t
            for t in node_taints
            if t[2] != "PreferNoSchedule" and not any(oracle_tolerates(x, t) for x in tolerations)
        ),
        None,
    )
    assert taints.untolerated(node_taints, tolerations) == expected


# --- topology assignments -----------------------------------------------------------------


def test_a_compressed_topology_assignment_names_each_lowest_domain_and_its_pods() -> None:
    """Kueue v1beta2's slices: a universal value repeated over the slice's domains, individual
    roots between a prefix and a suffix, pods given once or per domain; v1beta1's domains."""
    v1beta2 = {
        "levels": ["rack", "kubernetes.io/hostname"],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [
                    {"universal": "r1"},
                    {"individual": {"prefix": "gpu-", "roots": ["1", "2"]}},
                ],
                "podCounts": {"individual": [3, 1]},
            },
            {
                "domainCount": 1,
                "valuesPerLevel": [{"universal": "r2"}, {"universal": "gpu-9"}],
                "podCounts": {"universal": 4},
            },
            {
                "domainCount": 2,
                "valuesPerLevel": [
                    {"universal": "r3"},
                    {"individual": {"prefix": "n", "suffix": ".x", "roots": ["a", "b"]}},
                ],
                "podCounts": {"universal": 2},
            },
        ],
    }
    assert assignments.lowest_domains(v1beta2) == [
        ("gpu-1", 3),
        ("gpu-2", 1),
        ("gpu-9", 4),
        ("na.x", 2),
        ("nb.x", 2),
    ]
    v1beta1 = {
        "levels": ["rack", "kubernetes.io/hostname"],
        "domains": [{"values": ["r1", "gpu-1"], "count": 2}, {"values": ["r1", "gpu-2"], "count": 1}],
    }
    assert assignments.lowest_domains(v1beta1) == [("gpu-1", 2), ("gpu-2", 1)]
    assert assignments.lowest_domains({"levels": ["kubernetes.io/hostname"]}) == []
