"""A Sphinx extension (listed in _config.yml's `sphinx: extra_extensions`): plotly.js and each Plotly figure's data
loaded only when the reader can see the figure.

A page's interactive figures (`pages.plots`) are HTML whose script calls `Plotly.newPlot` with the figure's data
inline (up to 1.4 MB) and does not carry plotly.js (4.8 MB). Jupyter Book would load every script in `_static/` on
every page, so the book keeps plotly.js out of `_static/`, and on each HTML page whose body draws a Plotly figure
(`uses_plotly`) this extension moves every drawing script into a file of its own, `_static/figures/PAGE-K.js`,
leaving in its place an inert `<script type="text/x-plotly-deferred">` that names it and plotly.js
(`defer_figures`, on `html-page-context`). `_static/page_folds.js` loads plotly.js and then a figure's file when
the figure is on the page and not inside a closed fold, at load or when its fold opens: a page whose figures are
folded loads neither. When the build ends the installed plotly.js is written to `_static/plotly.min.js`
(`write_plotly`), so the figures work offline.
"""
from __future__ import annotations

import re
from pathlib import Path

PLOTLY_JS = "plotly.min.js"
DRAWS = "Plotly.newPlot"  # what a Plotly figure's HTML (`fig.to_html`) calls to draw itself
DEFERRED = "text/x-plotly-deferred"  # a script type no browser runs: page_folds.js loads the file it names
FIGURES = "figures"  # under _static/: one file per drawing script
SCRIPT = re.compile(r"<script(?P<attrs>[^>]*)>(?P<code>.*?)</script>", re.S)


def uses_plotly(html: str) -> bool:
    """Whether a page's HTML draws a Plotly figure."""
    return DRAWS in html


def defer_figures(body: str, write, plotly_src: str) -> str:
    """`body` with each script that draws a Plotly figure replaced by an inert one naming the file `write(code, k)`
    put its code in (the URL it returns) and plotly.js (`plotly_src`); other scripts are kept as they are."""
    count = 0

    def replace(match: re.Match) -> str:
        nonlocal count
        if DRAWS not in match["code"]:
            return match[0]
        count += 1
        src = write(match["code"], count)
        return f'<script type="{DEFERRED}" data-src="{src}" data-plotly="{plotly_src}"></script>'

    return SCRIPT.sub(replace, body)


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
    """`html-page-context`: on a page whose body draws a Plotly figure, move each drawing script to its own file
    under `_static/figures/` and leave an inert script naming it (`defer_figures`)."""
    body = context.get("body", "")
    if not uses_plotly(body):
        return
    folder = Path(app.outdir) / "_static" / FIGURES
    folder.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_-]", "-", pagename)

    def write(code: str, k: int) -> str:
        name = f"{stem}-{k}.js"
        (folder / name).write_text(code)
        return context["pathto"](f"_static/{FIGURES}/{name}", 1)

    context["body"] = defer_figures(body, write, context["pathto"](f"_static/{PLOTLY_JS}", 1))


def ship_plotly(app, exception: Exception | None) -> None:
    """`build-finished`: put plotly.js into the HTML build's `_static/` (the pages that draw a figure load it)."""
    if exception is None and app.builder.format == "html":
        write_plotly(Path(app.outdir) / "_static")


def setup(app) -> dict:
    app.connect("html-page-context", add_plotly)
    app.connect("build-finished", ship_plotly)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
