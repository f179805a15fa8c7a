"""Did-you-mean: the names nearest a misspelt one, by edit distance."""

from __future__ import annotations

from collections.abc import Iterable


def distance(a: str, b: str) -> int:
    """Levenshtein distance: the fewest insertions, deletions and substitutions from a to b."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i]
        for j, char_b in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)))
        previous = current
    return previous[-1]


def nearest(wanted: str, names: Iterable[str], most: int = 2) -> list[str]:
    """The names at the smallest edit distance from ``wanted``, if it is at most ``most`` (a
    typo's reach), in name order; none when nothing is that close."""
    scored = sorted((distance(wanted, name), name) for name in set(names) if name != wanted)
    if not scored or scored[0][0] > most:
        return []
    return [name for score, name in scored if score == scored[0][0]]
