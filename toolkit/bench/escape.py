"""Text from a results.json into the three formats a report writes: HTML, Markdown, plot labels.

Every string in a results.json (run names, provider and instance strings, NCCL settings, host
names, error lines) is data from wherever the run directory came from, so each format gets its
own escaping, applied to every value that reaches it:

- all three first pass it through `toolkit.output.clean`, the cleaning of everything gpuctl prints:
  a report is for sharing, so a credential in it is redacted as on a terminal, and what steers a
  terminal or hides text (C0/C1 controls, bidirectional overrides, line separators) becomes
  `\\uXXXX`: `cat report.md` must not move the cursor either;
- `html_text`: HTML-escaped, quotes too, so it is safe in an element and in an attribute value;
- `markdown_text`: one line, and every character that can start Markdown syntax backslash-escaped
  (CommonMark lets any ASCII punctuation be escaped): no table cell split by `|`, no link, image,
  emphasis, code span or raw HTML (`<`), no `$` maths (GitHub); text never starts a line, so the
  line-start syntax (headings, lists) cannot arise. An `_` between two letters
  or digits stays (it cannot emphasise there), so `all_reduce` and `NCCL_IB_HCA` stay readable.
  A bare URL is left as it is: GitHub shows it as a link whose target is the text it shows;
- `plot_text`: matplotlib reads a pair of `$` as mathtext (and raises on bad maths), so every `$` is
  escaped; a label that starts with `_` is one matplotlib leaves out of the legend, so it gets a
  leading space.
"""

from __future__ import annotations

import html
from urllib.parse import quote

from toolkit.output import clean

# ASCII punctuation that can begin or end Markdown syntax inside a line: emphasis, code spans, links
# and images (`[`, `]`: with those escaped, `(` and `!` mean nothing), raw HTML and autolinks (`<`),
# entities, table cells, a heading's closing `#`s, GitHub's maths and strikethrough.
_MARKDOWN_SPECIAL = frozenset("\\`*_[]<>&|#$~")


def html_text(value: object) -> str:
    return html.escape(clean(str(value)), quote=True)


def markdown_text(value: object) -> str:
    text = clean(str(value)).replace("\n", " ").replace("\t", " ")
    out: list[str] = []
    for index, char in enumerate(text):
        if char in _MARKDOWN_SPECIAL and not (char == "_" and _between_word_characters(text, index)):
            out.append("\\")
        out.append(char)
    return "".join(out)


def _between_word_characters(text: str, index: int) -> bool:
    before = text[index - 1] if index > 0 else " "
    after = text[index + 1] if index + 1 < len(text) else " "
    return all(c.isascii() and c.isalnum() for c in (before, after))


def plot_text(value: object) -> str:
    text = clean(str(value)).replace("$", "\\$")
    return f" {text}" if text.startswith("_") else text


def url_path(file_name: str) -> str:
    """A file name beside the page as a relative URL (percent-encoded; no scheme can sneak in)."""
    return quote(file_name, safe="")
