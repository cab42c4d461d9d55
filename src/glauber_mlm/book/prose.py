"""Numbers in a page's prose must come from the page's own cells: the check behind "the text never outruns the numbers".

A number in a markdown cell is *accounted for* when it appears in the source of a code cell (a parameter,
a grid, a constant the code uses) or in what a code cell printed or displayed (a table, an f-string, a
glued value). Everything else — a result typed by hand from some earlier run — is reported. Not counted
as numbers: math (`$…$`, `$$…$$`, where formulas and closed-form constants live), inline code, link
targets, citations (an arXiv identifier, a GitHub issue `owner/repo#N`), MyST labels and roles, small whole
numbers (≤ 10: "two sites", "paper Fig 5", "section 2"), and the book's one convention, the 95 % level of every interval (`stats`' default `level=0.95`).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

SMALL = 10
CONVENTIONS = {"95"}
_NUMBER = re.compile(r"(?<![\w.])[-−]?\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")
_STRIP = [
    re.compile(r"\$\$.*?\$\$", re.S),          # display math
    re.compile(r"\$[^$\n]+\$"),                # inline math
    re.compile(r"```.*?```", re.S),            # fenced blocks
    re.compile(r"`[^`\n]*`"),                  # inline code
    re.compile(r"\]\([^)]*\)"),                # link targets
    re.compile(r"arXiv[: ]\d{4}\.\d{4,5}(?:v\d+)?"),  # a citation
    re.compile(r"[\w.-]+/[\w.-]+#\d+"),        # a GitHub issue or pull request
    re.compile(r"\{[a-z-]+\}`[^`]*`"),         # roles such as {glue:}`name`
    re.compile(r"^\(.*?\)=\s*$", re.M),        # MyST labels
]


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _canonical(token: str) -> str:
    """'1,234' → '1234', '−0.50' → '-0.50', '3.0' stays (a printed '3.0' accounts for a typed '3.0' only)."""
    return token.replace(",", "").replace("−", "-")


def numbers_in(text: str) -> list[str]:
    """The numbers of `text` outside math, code, links and labels, larger than the small whole numbers."""
    for pattern in _STRIP:
        text = pattern.sub(" ", text)
    found = []
    for match in _NUMBER.finditer(text):
        token = _canonical(match.group())
        if token in CONVENTIONS or re.fullmatch(r"-?\d+", token) and abs(int(token)) <= SMALL:
            continue
        found.append(token)
    return found


def produced_text(cells: list[dict]) -> str:
    """Everything the code cells say: their sources and their outputs (streams, text/plain, markdown, html)."""
    parts = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        parts.append(_text(cell.get("source")))
        for out in cell.get("outputs", []):
            parts.append(_text(out.get("text")))
            data = out.get("data", {})
            for mime in ("text/plain", "text/markdown", "text/html"):
                parts.append(_text(data.get(mime)))
    return re.sub(r"(?<=\d)_(?=\d)", "", _canonical("\n".join(parts)))  # 10_000 in code is 10000


def unaccounted_numbers(notebook: Path) -> list[tuple[int, str]]:
    """(markdown cell index, number) for every number in the prose that no code cell produced or contains."""
    cells = json.loads(Path(notebook).read_text())["cells"]
    produced = produced_text(cells)
    known = set(_NUMBER.findall(produced)) | {t.lstrip("-") for t in _NUMBER.findall(produced)}
    missing = []
    for k, cell in enumerate(cells):
        if cell.get("cell_type") != "markdown":
            continue
        for token in numbers_in(_text(cell.get("source"))):
            if token not in known and token.lstrip("-") not in known:
                missing.append((k, token))
    return missing
