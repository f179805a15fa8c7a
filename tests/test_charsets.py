"""The character classes tasgen judges text by, against YAML 1.2's printable set (section
5.1), for every code point: they list what is refused (compiling a class of the allowed
million code points cost milliseconds of every run), so a gap would let a character through."""

from __future__ import annotations

from tasgen.emit import yaml as writer
from tasgen.parse import guard

EVERY = "".join(map(chr, range(0x110000)))


def printable(c: str) -> bool:
    """YAML 1.2 c-printable."""
    n = ord(c)
    return (
        n in (0x09, 0x0A, 0x0D, 0x85)
        or 0x20 <= n <= 0x7E
        or 0xA0 <= n <= 0xD7FF
        or 0xE000 <= n <= 0xFFFD
        or 0x10000 <= n <= 0x10FFFF
    )


def test_the_guard_refuses_exactly_what_yaml_does_not_print() -> None:
    assert set(guard._FORBIDDEN.findall(EVERY)) == {c for c in EVERY if not printable(c)}


def test_an_ascii_texts_shape_marks_exactly_what_yaml_does_not_print() -> None:
    ascii_text = EVERY[:0x80]
    shape = guard.shape_piece(ascii_text)
    assert {chr(i) for i, b in enumerate(shape) if b == 0} == {c for c in ascii_text if not printable(c)}


def test_the_writer_escapes_controls_and_what_old_readers_misread() -> None:
    # in a quoted scalar every C0 control is escaped (tab and line breaks too); YAML 1.1
    # readers take NEL, LS and PS for line breaks; a BOM inside a scalar would be dropped
    misread = {"\t", "\n", "\r", "\x85", "\u2028", "\u2029", "\ufeff"}
    assert set(writer._UNSAFE.findall(EVERY)) == {c for c in EVERY if not printable(c) or c in misread}


def test_a_block_line_holds_tabs_but_nothing_else_escaped() -> None:
    allowed = {c for c in EVERY if writer._BLOCK_LINE.match(c + "x")}
    assert allowed == set(EVERY) - set(writer._UNSAFE.findall(EVERY)) | {"\t"}
