"""A Sphinx extension (listed in _config.yml's `sphinx: extra_extensions`): plotly.js only on the pages that draw a
Plotly figure.

A page's interactive figures (`pages.plots`) are HTML that calls `Plotly.newPlot` and does not carry plotly.js
(4.8 MB). Jupyter Book would load every script in `_static/` on every page, so the book keeps plotly.js out of
`_static/`: on each HTML page whose body draws a Plotly figure (`uses_plotly`) this extension adds
`_static/plotly.min.js` to that page's scripts (`add_js_file` on `html-page-context` adds it to that page alone,
in its head, before the figure's own script runs), and when the build ends it writes the installed plotly.js there
(`write_plotly`), so the figures work offline.
"""
from __future__ import annotations

from pathlib import Path

PLOTLY_JS = "plotly.min.js"
DRAWS = "Plotly.newPlot"  # what a Plotly figure's HTML (`fig.to_html`) calls to draw itself


def uses_plotly(html: str) -> bool:
    """Whether a page's HTML draws a Plotly figure."""
    return DRAWS in html


def write_plotly(static: Path) -> Path:
    """Write the installed plotly.js to `static/plotly.min.js` (rewritten only when it differs) and return it."""
    from plotly.offline import get_plotlyjs

    path = Path(static) / PLOTLY_JS
    path.parent.mkdir(parents=True, exist_ok=True)
    js = get_plotlyjs()
    if not path.exists() or path.read_text() != js:
        path.write_text(js)
    return path


def add_plotly(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """`html-page-context`: load plotly.js on this page when its body draws a Plotly figure."""
    if uses_plotly(context.get("body", "")):
        app.add_js_file(PLOTLY_JS)


def ship_plotly(app, exception: Exception | None) -> None:
    """`build-finished`: put plotly.js into the HTML build's `_static/` (the pages that draw a figure load it)."""
    if exception is None and app.builder.format == "html":
        write_plotly(Path(app.outdir) / "_static")


def setup(app) -> dict:
    app.connect("html-page-context", add_plotly)
    app.connect("build-finished", ship_plotly)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
