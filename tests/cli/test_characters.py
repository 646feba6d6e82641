"""One rule for characters that steer or hide text: the terminal, comments, ansible.cfg and the spec agree."""

from __future__ import annotations

import pytest

from toolkit.comment import comment_text
from toolkit.configure.render import ini_value
from toolkit.errors import UsageError
from toolkit.output import neutralise
from toolkit.spec.models import check_text

pytestmark = pytest.mark.unit

# Each one hides or reorders text, or breaks a line somewhere; the first five were missed by the
# terminal's own list before there was one rule.
HIDDEN = {
    "\u061c": "\\u061c",  # ARABIC LETTER MARK (Cf)
    "\u200b": "\\u200b",  # ZERO WIDTH SPACE (Cf)
    "\u2060": "\\u2060",  # WORD JOINER (Cf)
    "\ufeff": "\\ufeff",  # BYTE ORDER MARK (Cf)
    "\u00ad": "\\u00ad",  # SOFT HYPHEN (Cf)
    "\u202e": "\\u202e",  # RIGHT-TO-LEFT OVERRIDE (Cf)
    "\u2028": "\\u2028",  # LINE SEPARATOR (Zl)
    "\x1b": "\\u001b",  # ESC (Cc)
    "\x85": "\\u0085",  # NEL (Cc)
    "\r": "\\u000d",
    "\ud800": "\\ud800",  # a lone surrogate (Cs)
}


@pytest.mark.parametrize("char", list(HIDDEN))
def test_every_surface_treats_the_character_alike(char: str) -> None:
    text = f"ab{char}cd"
    assert neutralise(text) == f"ab{HIDDEN[char]}cd"
    assert comment_text(text) == f"ab{HIDDEN[char]}cd"
    with pytest.raises(ValueError, match=f"contains a control character U\\+{ord(char):04X}"):
        check_text(text)
    with pytest.raises(UsageError, match=f"holds a control character U\\+{ord(char):04X}"):
        ini_value("remote_tmp", text)


def test_what_each_surface_keeps() -> None:
    assert neutralise("a\tb\nc") == "a\tb\nc"  # the terminal keeps tabs and line breaks
    assert neutralise("a\r\nb") == "a\nb"
    assert comment_text("a\tb\nc") == "a\\u0009b\\u000ac"  # a comment is one line
    # Visible text outside ASCII is text, not a control: CJK, accents, a no-break space.
    for text in ("上海五区", "Zürich", "a\u00a0b", "ü̈"):
        assert neutralise(text) == text
        assert comment_text(text) == text
        assert check_text(text) == text
