"""Text from data, made safe to write inside a `#` comment of a file gpuctl writes.

A comment in YAML (a spec `choose --write-spec` writes, an inventory), in an INI file (ansible.cfg)
or in nccl.conf ends at the first line break, and what follows is read as content: a price cache's
`source` with a newline in it could add keys to a written spec. `comment_text` writes every
character that ends a line in any of these formats (\\n, \\r, NEL U+0085, U+2028, U+2029, which YAML
1.1 also breaks lines at) or that hides or reorders text (the other C0/C1 controls, DEL, zero-width
and bidirectional formatting characters, lone surrogates) as the six characters `\\uXXXX`, so a
comment stays one line, whatever it quotes.
"""

from __future__ import annotations

from toolkit.characters import escape_controls


def comment_text(text: str) -> str:
    """`text` as one line for a comment: every control, format and separator character as \\uXXXX."""
    return escape_controls(text)  # the one rule: toolkit/characters.py
