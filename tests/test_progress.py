"""Issue 35 item 2: progress in one place. The driver's `progress_bar` builds every progress bar of the engine; the
measures report theirs through it (`counted`), and no other module of the package imports tqdm."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

import glauber_mlm
import glauber_mlm.samplers.driver as driver
from glauber_mlm import exact, glauber, influence_matrix
from glauber_mlm.measures.margins import token_margins

PACKAGE = Path(glauber_mlm.__file__).parent


def test_only_the_driver_mentions_tqdm():
    assert [p.relative_to(PACKAGE).as_posix() for p in sorted(PACKAGE.rglob("*.py"))
            if "tqdm" in p.read_text()] == ["samplers/driver.py"]


@pytest.fixture
def bars(monkeypatch) -> list[tuple[str, int, bool]]:
    """(desc, total, enabled) of every bar the driver builds while the test runs."""
    built, real = [], driver.progress_bar

    def spy(total: int, desc: str, enabled: bool = True, initial: int = 0):
        built.append((desc, total, enabled))
        return real(total, desc, enabled, initial)

    monkeypatch.setattr(driver, "progress_bar", spy)
    return built


def test_samplers_and_measures_build_their_bars_through_the_driver(bars, capsys):
    model = exact.potts_chain(4, q=3)
    x = torch.zeros(2, 4, dtype=torch.long)
    glauber(model, x, 5, progress=True)
    influence_matrix(model, x, [1.0], replacements=1, top_k=1, progress=True)
    token_margins(model, x, chunk=4, progress=True)
    assert bars == [("glauber", 5, True), ("influence", 2, True), ("margins", 2, True)]
    err = capsys.readouterr().err
    assert "influence: 100%" in err and "margins: 100%" in err


def test_counted_yields_every_item_once_and_is_silent_when_disabled(capsys):
    assert list(driver.counted(range(3, 9, 2), "x", enabled=False)) == [3, 5, 7]
    assert capsys.readouterr().err == ""
