"""Issue 34 item 4: non-finite values stop at the source.

A model finite on the load-time probe but NaN in some contexts (a tiny BERT with one embedding row of 1e30) is
refused by every sampler and measure that evaluates conditionals, with the one message of
`conditionals.require_finite`, never passed on as NaN; the interval helpers refuse NaN resamples instead of
dropping them.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import BertForMaskedLM

from glauber_mlm import (Rectangles, coupling_times, glauber, influence_matrix, load_mlm, local_margins,
                         random_rectangles, rectangle_statistic, rectangle_test)
from glauber_mlm.measures.compatibility import CandidatePairs, compatibility_test, top_k_candidates
from glauber_mlm.measures.margins import token_margins
from glauber_mlm.measures.semantic import one_token_neighbours
from glauber_mlm.samplers.metropolis import pseudo_log_likelihood
from glauber_mlm.stats import difference_ci, spearman_ci, unit_bootstrap_ci
from tiny_models import save_tiny

MESSAGE = r"the model gave non-finite logits .* NaN logits from the model"
N = 5


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory):
    """(model, poison id): a tiny BERT whose embedding row of one ordinary token is 1e30, saved and loaded as a user's
    model would be (the load-time probe, a state of the first ordinary token, sees nothing wrong)."""
    folder = save_tiny(tmp_path_factory.mktemp("poisoned"))
    model = load_mlm(folder, device="cpu", dtype=torch.float32)
    poison = int(torch.nonzero(model.support).flatten()[3])
    bert = BertForMaskedLM.from_pretrained(folder)
    with torch.no_grad():
        bert.bert.embeddings.word_embeddings.weight[poison] = 1e30
    bert.save_pretrained(folder)
    return load_mlm(folder, device="cpu", dtype=torch.float32), poison


def states(model, poison: int, rows: int = 2) -> torch.Tensor:
    """`rows` states of N ordinary tokens with the poison at the last site (a site no measure below queries alone)."""
    ordinary = torch.nonzero(model.support).flatten()
    x = ordinary[torch.arange(rows * N) % 3].view(rows, N)
    x[:, -1] = poison
    return x


def test_the_poisoned_model_is_finite_without_the_poison(poisoned):
    model, poison = poisoned
    clean = states(model, poison)
    clean[:, -1] = clean[:, 0]
    assert torch.isfinite(local_margins(model, clean)).all()
    assert torch.isnan(model.logits(states(model, poison), torch.zeros(2, dtype=torch.long))[:, model.support]).all()


def rectangles(model, poison: int) -> Rectangles:
    x = states(model, poison)
    a, b = x[:, 0], x[:, 1]
    other = torch.nonzero(model.support).flatten()[5]
    return Rectangles(x, torch.zeros(2, dtype=torch.long), torch.ones(2, dtype=torch.long), a,
                      torch.full_like(a, int(other)), b, torch.full_like(b, int(other)))


def pairs(model, poison: int) -> CandidatePairs:
    x = states(model, poison)
    ordinary = torch.nonzero(model.support).flatten()
    return CandidatePairs(x, torch.zeros(2, dtype=torch.long), torch.ones(2, dtype=torch.long),
                          ordinary[:3].repeat(2, 1), ordinary[4:7].repeat(2, 1))


MEASURES = {
    "glauber": lambda m, x, p: glauber(m, x, 3),
    "coupling_times": lambda m, x, p: coupling_times(m, x, x.flip(1), 3),
    "local_margins": lambda m, x, p: local_margins(m, x),
    "token_margins": lambda m, x, p: token_margins(m, x),
    "pseudo_log_likelihood": lambda m, x, p: pseudo_log_likelihood(m, x),
    "influence_matrix": lambda m, x, p: influence_matrix(m, x, [1.0], replacements=1, top_k=2),
    "rectangle_test": lambda m, x, p: rectangle_test(m, rectangles(m, p)),
    "rectangle_statistic": lambda m, x, p: rectangle_statistic(m, rectangles(m, p)),
    "random_rectangles": lambda m, x, p: random_rectangles(m, x, 2),
    "top_k_candidates": lambda m, x, p: top_k_candidates(m, x, torch.zeros(2, dtype=torch.long),
                                                         torch.ones(2, dtype=torch.long), 3),
    "compatibility_test": lambda m, x, p: compatibility_test(m, pairs(m, p)),
    "one_token_neighbours": lambda m, x, p: one_token_neighbours(m, x, per_state=2),
}


@pytest.mark.parametrize("name", sorted(MEASURES))
def test_every_measure_refuses_nan_logits_with_one_message(poisoned, name):
    model, poison = poisoned
    with pytest.raises(ValueError, match=MESSAGE):
        MEASURES[name](model, states(model, poison), poison)


def test_a_row_of_all_minus_infinity_is_refused_too():
    from glauber_mlm.conditionals import require_finite

    logits = torch.tensor([[0.0, float("-inf")], [float("-inf"), float("-inf")]])
    with pytest.raises(ValueError, match=r"rows \[1\] at sites \[4\]"):
        require_finite(logits, torch.tensor([3, 4]))
    assert require_finite(logits[:1], torch.tensor([3])) is not None  # −inf outside the support is the convention


# ---------------------------------------------------------------------------------------------- interval helpers
def test_interval_helpers_count_nan_resamples_and_give_no_interval_instead_of_dropping_them():
    units = np.arange(20)
    values = np.linspace(0.0, 1.0, 20)
    values[3] = np.nan
    with pytest.warns(RuntimeWarning, match=r"of 200 bootstrap resamples gave a NaN statistic"):
        _, low, high = unit_bootstrap_ci(units, lambda k: np.mean(values[k]), n_boot=200)
    assert np.isnan(low) and np.isnan(high)  # not the narrower interval of the defined resamples
    with pytest.warns(RuntimeWarning, match="NaN statistic"):
        assert np.isnan(difference_ci(values, units, np.ones(10), np.arange(10), n_boot=200)[1])
    # a correlation is undefined on a resample of one unit drawn twice: 2 units, one row each
    with pytest.warns(RuntimeWarning, match="NaN statistic"), np.errstate(invalid="ignore"):
        r, low, high = spearman_ci([0.0, 1.0], [1.0, 0.0], [0, 1], n_boot=200)
    assert r == pytest.approx(-1.0) and np.isnan(low) and np.isnan(high)


def test_interval_helpers_are_unchanged_on_finite_resamples():
    est, low, high = unit_bootstrap_ci(np.arange(30), lambda k: np.mean(np.arange(30.0)[k]), n_boot=300)
    assert low < est == 14.5 < high
