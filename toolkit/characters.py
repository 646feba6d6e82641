"""The one rule for characters that steer or hide text, shared by everything that prints or writes it.

A character is a control here when its Unicode category is Cc (C0 and C1 controls, DEL), Cf (format
characters: zero-width space U+200B, word joiner U+2060, the byte order mark U+FEFF, soft hyphen
U+00AD, the Arabic letter mark U+061C and the bidirectional overrides of "Trojan Source"), Zl or Zp
(the line and paragraph separators U+2028/U+2029, line breaks to YAML 1.1 and to many viewers) or Cs
(lone surrogates). The spec refuses them (spec/models.py), ansible.cfg refuses them
(configure/render.py), comments and the terminal write them as `\\uXXXX` (comment.py, output.py).
"""

from __future__ import annotations

import unicodedata

CONTROL_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def is_control(char: str) -> bool:
    return unicodedata.category(char) in CONTROL_CATEGORIES


def first_control(text: str) -> str | None:
    """The first control character in `text`, or None."""
    if text.isprintable():  # C-speed: no Cc/Cf/Zl/Zp/Cs (nor Zs but space, nor Co/Cn) in it
        return None
    return next((char for char in text if is_control(char)), None)


def escape_controls(text: str, *, keep: str = "") -> str:
    """`text` with every control character but those in `keep` written as the six characters `\\uXXXX`."""
    plain = text.translate({ord(char): None for char in keep}) if keep else text
    if plain.isprintable():
        return text
    return "".join(f"\\u{ord(char):04x}" if char not in keep and is_control(char) else char for char in text)
