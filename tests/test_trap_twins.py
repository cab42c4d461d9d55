"""Notebook 03's trap criterion against basin-free twins (issue 42): Glauber chains on independent sites at a chain's
own change rate, the planted two-well chain, the compiled trap scan, and the criterion's size and power at the page's
cpu design (8 chains, n = 24, 2,000 steps recorded every 10, traps of ≥ 100 steps, radius at the 0.9 quantile of the
one-token jitter, 4 twins per chain). Known answers: closed-form change rates, exact conditionals, the detector."""
import numpy as np
import pytest
import torch

from glauber_mlm import exact
from glauber_mlm.conditionals import conditional_probabilities
from glauber_mlm.measures import semantic, twins
from glauber_mlm.pages.planted import traps

DESIGN = dict(steps=2000, record_every=10, min_dwell=100)
DATA_RATES = (0.049, 0.074, 0.105)   # the issue's token-change rates at 03's cpu design


def test_tempering_reaches_the_asked_change_rate_and_flattens_towards_an_unreachable_one():
    laws = np.random.default_rng(0).normal(0, 3, (3, 24, 16))
    rates = np.array([0.0, 0.05, 0.3])
    tempered = twins.tempered_to_rate(laws, rates)
    assert np.allclose(twins.stationary_change_rate(tempered), rates, atol=1e-6)
    assert np.allclose(np.exp(tempered).sum(-1), 1)
    assert (tempered[0].argmax(-1) == laws[0].argmax(-1)).all()     # rate 0: every site at its mode
    # 16 tokens change at most 15/16 of visits: a chain that changed at every step gets the flattest law, its
    # nearest basin-free twin (the paper dry run's random models change a token at nearly every step)
    flat = twins.tempered_to_rate(laws, np.array([0.05, 1.0, 0.1]))
    reached = twins.stationary_change_rate(flat)
    assert np.allclose(reached[[0, 2]], [0.05, 0.1], atol=1e-6)
    assert reached[1] == pytest.approx(twins.stationary_change_rate(1e-3 * laws[1:2])[0]) and 0.93 < reached[1] < 15 / 16
    for bad in (-0.1, 1.2, np.nan):
        with pytest.raises(ValueError, match="each in \\[0, 1\\]"):
            twins.tempered_to_rate(laws, np.array([0.05, bad, 0.1]))


def test_independent_site_chains_change_tokens_at_the_stationary_rate_and_keep_their_laws():
    rng = np.random.default_rng(1)
    laws = twins.tempered_to_rate(rng.normal(0, 2, (2, 6, 5)), np.array([0.1, 0.4]))
    x0 = np.stack([np.exp(laws[b]).argmax(-1) for b in range(2)])
    states, rec = twins.independent_site_chains(rng, laws, x0, 60_000, 1)
    assert rec.tolist() == list(range(60_001)) and states.shape == (60_001, 2, 6)
    changes = (states[1:] != states[:-1]).sum(-1).mean(0)            # at most one site per step
    assert ((states[1:] != states[:-1]).sum(-1) <= 1).all()
    assert np.allclose(changes, [0.1, 0.4], atol=0.01)
    freq = np.stack([(states[1000:, :, i, None] == np.arange(5)).mean(0) for i in range(6)], 1)  # (2, 6, 5)
    assert np.abs(freq - np.exp(laws)).max() < 0.03
    sparse, _ = twins.independent_site_chains(rng, laws, x0, 60_000, 50)   # exact at the records too
    late = np.stack([(sparse[20:, :, i, None] == np.arange(5)).mean(0) for i in range(6)], 1)
    assert np.abs(late - np.exp(laws)).max() < 0.05
    with pytest.raises(ValueError, match="x0 must be"):
        twins.independent_site_chains(rng, laws, x0[:, :3], 10, 1)


def test_model_site_laws_are_the_model_conditionals_at_every_site():
    model = exact.compatible_pairwise(n=5, q=4, seed=2)
    x = torch.tensor([[0, 1, 2, 3, 0], [3, 3, 3, 3, 3]])
    laws = twins.model_site_laws(model, x, temperature=0.5)
    assert laws.shape == (2, 5, 4)
    for i in range(5):
        p = conditional_probabilities(model, x, torch.full((2,), i), torch.full((2,), 0.5)).numpy()
        assert np.allclose(np.exp(laws[:, i]), p, atol=1e-6)
    states, rec, reached = twins.basin_free_twins(model, x, [0.2, 0.3], 40, 10, copies=3, seed=1)
    assert states.shape == (5, 6, 5) and rec.tolist() == [0, 10, 20, 30, 40] and np.allclose(reached, [0.2, 0.3])
    assert (states[0] == np.tile(x.numpy(), (3, 1))).all()           # copy c of chain b at column c·B + b


def test_the_curie_weiss_block_changes_tokens_at_its_closed_form_rate():
    rng = np.random.default_rng(3)
    laws = rng.normal(0, 1, (4, 8, 3))
    _, _, rate = traps.planted_glauber(rng, laws, np.zeros((4, 8), int), 40_000, 100, coupling=1.5, well_sites=8)
    assert np.allclose(rate.mean(), traps.curie_weiss_change_rate(1.5, 8), atol=0.01)
    cond = traps.two_well_conditionals(laws, np.zeros((1, 8), int), 1.5, 8)
    assert np.allclose(np.exp(cond[0, :, 0]), 1 / (1 + np.exp(-2 * 1.5 * 7 / 8)))   # all in well 0: M₋ᵢ = 7
    assert np.isneginf(cond[0, :, 2]).all()


def test_the_compiled_scan_is_the_detector_and_measures_where_the_traps_sit():
    rng = np.random.default_rng(4)
    d = traps.planted_chains(rng, [0.05, 0.1, 0.2], 800, 10, wells=True, levels=(0.5, 0.9))
    x, rec = d["chains"], d["records"]
    trapped, spread = traps.trap_statistics(x, rec, d["radii"], 50, 800)
    assert np.allclose(trapped, semantic.time_trapped_at(x, rec, d["radii"], 50, 800))
    for k, r in enumerate(d["radii"]):  # the spread from the detector's own traps
        t = semantic.chain_traps(x, rec, r, 50)
        for b in range(3):
            g = t[t.chain == b]
            c = np.array([x[s:e + 1, b].mean(0) for s, e in zip(g.start_index, g.end_index)]).reshape(-1, x.shape[2])
            w = g.dwell.to_numpy(float)
            want = (w * ((c - (w @ c) / w.sum()) ** 2).sum(1)).sum() / 800 if len(g) else 0.0
            assert spread[k, b] == pytest.approx(want, abs=1e-9)
    two = np.zeros((40, 1, 2))
    two[20:, 0, 0] = 10.0                                               # two traps 10 apart, 190 steps each
    _, s = traps.trap_statistics(two, np.arange(40) * 10, [1.0], 100, 400)
    assert s[0, 0] == pytest.approx(2 * 190 * 25 / 400)


def test_the_within_chain_permutation_p_is_exact():
    assert traps.within_chain_permutation_p([1.0, 1.0], [[0.0, 0.0]]) == pytest.approx(1 / 4)
    assert traps.within_chain_permutation_p([5.0] * 3, np.zeros((4, 3))) == pytest.approx(1 / 125)
    assert traps.within_chain_permutation_p([0.0, 0.0], [[1.0, 1.0]]) == 1.0
    assert traps.within_chain_permutation_p([2.0, 0.0], [[0.0, 2.0]]) == pytest.approx(3 / 4)


@pytest.mark.parametrize("rate", DATA_RATES)
def test_basin_free_chains_never_pass_the_trap_criterion_at_the_pages_design(rate):
    """Done-when of issue 42: 40 planted basin-free (independent-site) Glauber chains sets at 03's cpu design, at the
    data's change rate, pass the criterion 0 times; the chains change tokens at that rate."""
    rng = np.random.default_rng(int(rate * 1000))
    passes, measured = 0, []
    for _ in range(40):
        d = traps.planted_chains(rng, np.full(8, rate), DESIGN["steps"], DESIGN["record_every"], wells=False)
        passes += traps.trap_criterion(d["chains"], d["twins"], d["records"], d["radii"][0], DESIGN["min_dwell"],
                                       DESIGN["steps"])
        measured.append(d["rates"].mean())
    assert passes == 0 and abs(np.mean(measured) - rate) < 0.01


def test_basin_free_chains_leaving_their_start_do_not_pass_either():
    rng = np.random.default_rng(5)
    passes = sum(traps.trap_criterion(d["chains"], d["twins"], d["records"], d["radii"][0], 100, 2000)
                 for d in (traps.planted_chains(rng, np.full(8, rate), 2000, 10, wells=False, uniform_start=True)
                           for rate in DATA_RATES for _ in range(5)))
    assert passes == 0


def test_two_well_chains_pass_the_trap_criterion_at_the_pages_design():
    rng = np.random.default_rng(6)
    passes = [traps.trap_criterion(d["chains"], d["twins"], d["records"], d["radii"][0], 100, 2000)
              for d in (traps.planted_chains(rng, np.full(8, rate), 2000, 10, wells=True)
                        for rate in DATA_RATES for _ in range(10))]
    assert np.mean(passes) >= 0.85


def test_the_criterion_refuses_twins_that_are_not_copies_of_the_chains():
    x = np.zeros((5, 3, 2))
    with pytest.raises(ValueError, match="twins"):
        traps.trap_criterion(x, np.zeros((5, 4, 2)), np.arange(5) * 10, 1.0, 10, 40)


def test_the_calibration_decides_at_the_pages_design():
    cal, panel = traps.trap_twin_calibration(np.full(8, 0.074), 2000, 10, 100, [0.5, 0.9, 0.99], 1, replicates=30)
    assert cal.power >= 0.85 and cal.size == 0 and panel.size == 0
    assert cal.decides(True) and cal.decides(False)
