"""Issue 43, item 6: symlinked results or staging folders are refused in one sentence before a kernel starts; `new`
writes nothing when a check fails (a rules record that is a list) and takes ASCII page numbers only;
`rectangle_statistic` refuses a −inf log-probability inside the support; `diagnose` tells a Hamming distance
saturated at its ceiling (every token changed) from a stuck chain."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from glauber_mlm import exact
from glauber_mlm.diagnostics import diagnose
from glauber_mlm.measures.rectangle import Rectangles, rectangle_statistic
from test_faults import CALLS, NAME, cli, world  # noqa: F401 - world is a fixture
from test_new_page import new, world as repo_world  # noqa: F401 - a fixture


# ---------------------------------------------------------------- symlinks


@pytest.mark.parametrize("link", ["results", "staging"])
def test_a_symlinked_results_or_staging_folder_is_refused_before_the_kernel(world, tmp_path, capsys, link):
    notebooks, root = world
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = root / "book" / "notebooks" / NAME if link == "results" else root / "_build" / "staging" / NAME
    where.parent.mkdir(parents=True)
    where.symlink_to(elsewhere, target_is_directory=True)
    assert cli(world, "run", NAME) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "symbolic link" in err and str(where) in err and "Traceback" not in err
    assert CALLS == [] and list(elsewhere.iterdir()) == [] and where.is_symlink()


# ---------------------------------------------------------------- new


def test_new_with_a_rules_record_that_is_a_list_writes_nothing(repo_world, capsys):
    rules = repo_world / "notebooks" / "rules.json"
    rules.write_text("[]\n")
    before = sorted(p.name for p in (repo_world / "notebooks").iterdir())
    assert new(repo_world, "11_newpage") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rules.json" in err and "TypeError" not in err
    assert sorted(p.name for p in (repo_world / "notebooks").iterdir()) == before and rules.read_text() == "[]\n"
    assert list((repo_world / "tests").iterdir()) == []


@pytest.mark.parametrize("name", ["٠٠_dup", "１１_wide", "0٣_mixed"])
def test_a_page_number_must_be_ascii_digits(repo_world, capsys, name):
    before = sorted(p.name for p in (repo_world / "notebooks").iterdir())
    assert new(repo_world, name) == 1
    assert "is not a page name" in capsys.readouterr().err
    assert sorted(p.name for p in (repo_world / "notebooks").iterdir()) == before


# ---------------------------------------------------------------- rectangle_statistic


class ZeroToken:
    """An exact model that gives one token of its support logit −inf at site 0 (probability 0 inside the support)."""

    def __init__(self, model, token: int):
        self.model, self.token = model, token
        self.vocab_size, self.max_length, self.device = model.vocab_size, model.max_length, model.device
        self.support = model.support

    def logits(self, states, sites, dtype=None):
        out = self.model.logits(states, sites, dtype=dtype).clone()
        out[sites == 0, self.token] = float("-inf")
        return out


def test_rectangle_statistic_refuses_minus_infinity_inside_the_support():
    potts = exact.potts_chain(4, q=3, coupling=0.5)
    contexts = torch.zeros(2, 4, dtype=torch.long)
    rects = Rectangles(contexts, torch.tensor([0, 1]), torch.tensor([1, 2]), torch.tensor([1, 0]),
                       torch.tensor([2, 1]), torch.tensor([0, 0]), torch.tensor([1, 2]))
    assert torch.isfinite(rectangle_statistic(potts, rects)).all()
    with pytest.raises(ValueError, match=r"probability 0.*inside the support.*rectangles \[0\]"):
        rectangle_statistic(ZeroToken(potts, 2), rects)


# ---------------------------------------------------------------- diagnose


def test_diagnose_calls_a_distance_at_its_ceiling_saturated_not_stuck():
    rng = np.random.default_rng(0)
    chains, draws, n, V = 4, 60, 6, 50
    start = rng.integers(0, 25, (chains, n))
    moving = rng.integers(25, V, (draws - 1, chains, n))  # every token differs from its start at every step after 0
    states = np.concatenate([start[None], moving])
    row = diagnose(states, discard=1).loc["hamming_to_start"]
    assert row.status == "saturated" and row.n_stuck == 0 and row["mean"] == n

    frozen = np.repeat(start[None], draws, 0)  # no token ever changes: stuck
    frozen[:, 1:] = states[:, 1:]  # chains 1..3 move, chain 0 stays at its start
    row = diagnose(frozen, discard=1).loc["hamming_to_start"]
    assert row.status == "stuck" and row.stuck_chains == (0,)
