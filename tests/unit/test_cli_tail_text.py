"""How ``lagless tail`` and the console show bytes as text."""

from __future__ import annotations

from lagless.cli.tail import NULL, text


def test_one_line_text_escapes_every_control_character_and_invalid_byte() -> None:
    assert text(b"a\tb\nc\rd\x07\x7f\xff\xc3\xa9") == "a\\tb\\nc\\rd\\x07\\x7f\\xffé"
    assert text(None) == NULL


def test_lines_keep_their_breaks_and_escape_the_rest() -> None:
    assert text(b"Traceback:\n  x\r\n\x1b[31m", lines=True) == "Traceback:\n  x\\r\n\\x1b[31m"
