"""What each pattern of the published JSON Schemas asks for, in words: a schema message names
the form a value must have, never the regular expression (tests/test_schema_words.py keeps every
pattern of the schemas here)."""

from __future__ import annotations

_SEGMENT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"

WORDS: dict[str, str] = {
    f"^{_SEGMENT}$": (
        "a DNS-1123 label: lowercase letters, digits and '-', starting and ending with a letter or "
        "digit (e.g. gpu-pool-1)"
    ),
    f"^{_SEGMENT}(\\.{_SEGMENT})*$": (
        "a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', each part between dots "
        "starting and ending with a letter or digit (e.g. nodes.example.com)"
    ),
    f"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.{_SEGMENT})*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{{0,61}}[A-Za-z0-9])?$": (
        "a Kubernetes name: an optional DNS subdomain and '/', then at most 63 letters, digits, "
        "'-', '_' and '.', starting and ending with a letter or digit (e.g. nvidia.com/gpu)"
    ),
    "^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$": (
        "a duration: numbers with a unit ms, s, m or h (e.g. 90s, 10m, 1h30m)"
    ),
    "^\\S+$": "one word, without white space",
    "^(\\.|\\./|(\\./)?[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*/?)$": (
        "a relative path: '.', or folders of letters, digits, '.', '_' and '-' separated by '/' "
        "(e.g. clusters/prod/rendered)"
    ),
    "^[+]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([KMGTPE]i|[mkMGTPE]|[eE][+-]?[0-9]+)?$": (
        "a Kubernetes quantity: a number with an optional suffix (e.g. 8, 500m, 64Gi)"
    ),
}


def in_words(pattern: str) -> str:
    """The form a pattern asks for; a pattern without words (none ships) gets a pointer to the
    schema rather than the expression."""
    return WORDS.get(pattern, "of the form the kind's JSON Schema requires (tasgen schema KIND prints it)")
