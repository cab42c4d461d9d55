"""Links from the result boxes and the intro's first screen to the glossary (book/glossary.md) for the words a reader
meets there first: each term's first appearance in a text becomes a link to its glossary entry.

`ANCHORS` gives each glossary entry's anchor as Sphinx writes it (its `_make_id` of "term-" and the term: case kept,
letters outside ASCII dropped); tests/test_first_screen.py checks each against Sphinx and against the glossary.
"""
from __future__ import annotations

import re

# how a term is written in a check or a claim → the glossary term it links to
TERMS = {
    "rectangle statistic": "rectangle statistic",
    "τ*": "critical temperature τ*",
    "L-lag": "L-lag coupling",
    "DKW": "DKW margin",
    "matched null": "matched null",
    "core check": "core check",
    "side check": "side check",
    "false-pass risk": "false-pass risk",
    "false-fail risk": "false-fail risk",
    "false pass": "false-pass risk",
    "false fail": "false-fail risk",
}
ANCHORS = {"rectangle statistic": "term-rectangle-statistic", "critical temperature τ*": "term-critical-temperature",
           "L-lag coupling": "term-L-lag-coupling", "DKW margin": "term-DKW-margin", "matched null": "term-matched-null",
           "core check": "term-core-check", "side check": "term-side-check", "false-pass risk": "term-false-pass-risk",
           "false-fail risk": "term-false-fail-risk"}
_FORMS = re.compile("|".join(re.escape(form) for form in sorted(TERMS, key=len, reverse=True)))
_MARKUP = re.compile(r"(<[^>]+>|`[^`]*`|\$[^$]*\$)")  # HTML tags, code and math: never linked inside


def link_terms(text: str, glossary: str) -> str:
    """`text` with the first appearance of each glossary term (`TERMS`) a link to `glossary`#its anchor, outside
    HTML tags, code and math; `glossary` is the glossary page's URL relative to the page the text is on."""
    seen: set[str] = set()

    def link(match: re.Match) -> str:
        term = TERMS[match.group(0)]
        if term in seen:
            return match.group(0)
        seen.add(term)
        return f'<a class="glossary-term" href="{glossary}#{ANCHORS[term]}">{match.group(0)}</a>'

    inside_link = False
    pieces = []
    for piece in _MARKUP.split(text):
        if _MARKUP.fullmatch(piece or " "):
            inside_link = piece.startswith("<a ") or (inside_link and not piece.startswith("</a"))
            pieces.append(piece)
        else:
            pieces.append(piece if inside_link else _FORMS.sub(link, piece))
    return "".join(pieces)
