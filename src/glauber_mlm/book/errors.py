"""The two failures `glauber-mlm run/book` report in one clear message (no traceback)."""
from __future__ import annotations

from pathlib import Path


class BookError(RuntimeError):
    """A failure the command reports in one clear message: bad input, an incomplete page, a failed build."""


class NotebookFailed(BookError):
    """A notebook raised while papermill executed it; the message names the cell and the error.

    `notebook` is the failed attempt's executed notebook (in the staging folder, never the published one)."""

    def __init__(self, message: str, notebook: Path | None = None):
        super().__init__(message)
        self.notebook = notebook
