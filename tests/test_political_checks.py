"""Notebook 04's checks: Page's blocked trend test on planted trends, its calibration, and the false-positive rate
of a score on text edited at random."""
import numpy as np
import pandas as pd
import pytest
import torch

from glauber_mlm.pages.planted import basin
from glauber_mlm.measures import political


def planted_chains(effect, starts=12, taus=(0.1, 0.25, 0.5, 1.0), seed=0):
    rng = np.random.default_rng(seed)
    trend = np.linspace(effect / 2, -effect / 2, len(taus))  # falls as τ rises
    v = rng.normal(0, 0.1, (starts, 1)) + trend + rng.normal(0, 0.05, (starts, len(taus)))
    return pd.DataFrame(dict(start_id=np.repeat(np.arange(starts), len(taus)), temperature=np.tile(taus, starts),
                             value=v.ravel()))


def test_page_finds_a_planted_fall_and_not_a_planted_rise():
    falling = planted_chains(0.5)
    assert political.page_trend(falling, "value", falls=True)["p_value"] < 1e-3
    assert political.page_trend(falling, "value", falls=False)["p_value"] > 0.9
    assert political.page_trend(planted_chains(-0.5), "value", falls=True)["p_value"] > 0.9


def test_page_needs_three_temperatures():
    assert np.isnan(political.page_trend(planted_chains(0.5, taus=(0.1, 1.0)), "value")["p_value"])


def test_the_blocked_trend_test_keeps_its_size_and_gains_power_with_starts():
    few = basin.blocked_trend_calibration(4, 4, 0.2, 0.3, 0.2, replicates=300)
    many = basin.blocked_trend_calibration(40, 4, 0.2, 0.3, 0.2, replicates=300)
    assert few.size <= 0.1 and many.size <= 0.1 and few.power < 0.5 < 0.8 <= many.power


class Score(political.PoliticalScore):
    """A planted score: a text is 'political' when more than half of its words are 'vote'."""

    def __init__(self):
        super().__init__("planted", None)

    def inside(self, emb):
        return np.asarray(emb) > 0.5


def test_false_positives_on_edited_text_follow_the_edit_rate():
    vocab = np.array(["news", "vote"])
    states = torch.zeros(400, 9, dtype=torch.long)  # all 'news': never political
    decode = lambda s: [" ".join(vocab[row]) for row in s.numpy()]  # noqa: E731
    embed = lambda texts: np.array([t.split().count("vote") / 9 for t in texts])  # noqa: E731
    table = political.corrupted_false_positives(Score(), embed, states, [1], [0.0, 0.3, 1.0],
                                                np.random.default_rng(0), decode)
    assert table.fraction.tolist()[0] == 0 and table.fraction.tolist()[2] == 1
    # P(Binomial(9, 0.3) > 4.5) = 0.0988
    assert table.ci_low[1] <= 0.0988 <= table.ci_high[1]
    assert (table.ci_low <= table.fraction).all() and (table.fraction <= table.ci_high).all()


def test_matched_rate_edits_change_tokens_at_each_chain_rate():
    from glauber_mlm.measures import semantic

    x0 = torch.zeros(3, 12, dtype=torch.long)
    states, steps = semantic.matched_rate_edits(x0, 4000, [0.0, 0.02, 0.5], [3, 4, 5], record_every=50, seed=1)
    assert states.shape == (81, 3, 12) and steps.tolist()[:3] == [0, 50, 100]
    assert (states[:, 0] == 0).all() and (states[-1, 2] != 0).all()
    # a chain at rate r edits ≈ r·steps times: the first record with all 12 sites edited comes late at 0.02
    moved = (states[:, 1] != 0).any(1).float()
    assert 0 < moved[1:].mean() and not (states[1, 1] != 0).all()
    with pytest.raises(ValueError, match="probabilities in"):
        semantic.matched_rate_edits(x0, 10, [0.1, 2.0, 0.1], [3], 5)


def test_start_memory_known_answers():
    starts = np.array([[0, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]])
    ends = np.array([[0, 0, 1, 1],   # half its own start, half the other start
                     [1, 1, 1, 1],   # still at its own start: own 0, others 1
                     [1, 1, 1, 1]])  # moved onto the other start: own 1, others 0
    m = political.start_memory(starts, ends, np.array(["a", "b", "a"]))
    np.testing.assert_allclose(m.own, [0.5, 0.0, 1.0])
    np.testing.assert_allclose(m.others, [0.5, 1.0, 0.0])
    with pytest.raises(ValueError, match="two starting passages"):
        political.start_memory(starts, ends, np.array(["a", "a", "a"]))


def test_recentred_fractions_keep_the_units_and_move_the_mean():
    rng = np.random.default_rng(0)
    values, units = rng.uniform(0.3, 0.5, 40), np.repeat(np.arange(20), 2)
    means = [basin.recentred_fractions(rng, values, units, 0.7)[0].mean() for _ in range(200)]
    assert abs(np.mean(means) - 0.7) < 0.01
    v, u = basin.recentred_fractions(rng, values, units, 0.7)
    assert v.shape == values.shape and np.bincount(u).tolist() == [2] * 20 and v.min() >= 0 and v.max() <= 1


def texts_of(documents: int, per_document: int, p: float, seed: int = 0):
    """0/1 texts called political with probability p, `per_document` texts to each of `documents` documents."""
    rng = np.random.default_rng(seed)
    return (rng.random(documents * per_document) < p).astype(float), np.repeat(np.arange(documents), per_document)


@pytest.mark.parametrize("reference", [None, texts_of(60, 5, 0.3)])
def test_level_gap_rule_has_power_on_a_planted_gap_and_keeps_its_size(reference):
    """Chains with a start spread of 0.1: a planted gap of 0.3 is found, no gap is not (intervals apart)."""
    rng = np.random.default_rng(1)
    units = np.repeat(np.arange(20), 2)
    values = np.clip(0.3 + rng.normal(0, 0.1, 20)[units] + rng.normal(0, 0.05, 40), 0, 1)
    mean = 0.3 if reference is None else float(reference[0].mean())
    cal = basin.level_gap_calibration(values, units, mean, 0.3, reference=reference, replicates=60)
    assert cal.power >= 0.9 and cal.size <= 0.05, cal
    weak = basin.level_gap_calibration(values, units, mean, 0.02, reference=reference, replicates=60)
    assert weak.power < 0.3, weak  # a gap inside the intervals is not found: the rule can fail


def test_under_every_family_passes_on_all_fails_on_none_and_stays_silent_when_they_disagree():
    above, below = (0.2, 0.1, 0.3), (0.0, -0.1, 0.1)
    assert political.under_every_family({"a": above, "b": above}) is True
    assert political.under_every_family({"a": below, "b": below}) is False
    assert political.under_every_family({"a": above, "b": below}) is None
    with pytest.raises(ValueError, match="at least one"):
        political.under_every_family({})


def test_every_family_calibration_is_decided_by_the_strictest_family():
    """Chains 0.25 above the strictest of three references (0.15, 0.25, 0.4) pass under all three; chains at it pass
    under all three no more often than the level rule's own size; a truth only above the weakest reference rarely
    passes under all."""
    rng = np.random.default_rng(2)
    units = np.repeat(np.arange(20), 2)
    values = np.clip(0.4 + rng.normal(0, 0.1, 20)[units] + rng.normal(0, 0.05, 40), 0, 1)
    refs = {f: texts_of(60, 5, p, seed=k) for k, (f, p) in enumerate(zip(political.NULL_FAMILIES, (0.15, 0.25, 0.4)))}
    cal = basin.every_family_calibration(values, units, refs, 0.25, replicates=60)
    assert cal.power >= 0.9 and cal.size <= 0.05, cal
    assert f"({max(r[0].mean() for r in refs.values()):.2f})" in cal.calibrated_on
    weak = basin.every_family_calibration(values, units, refs, 0.02, replicates=60)
    assert weak.power < 0.3, weak


def test_null_family_calls_write_each_family_at_the_share_and_score_it():
    """Every site prefers token 3 and a text is 'political' when most of its sites are 3: clean text (all 0) is never
    called; conditional edits at share 1 always are (every site to 3); uniform edits over {3} at share 0.5 are called
    when more than 3 of 6 sites moved, P(Binomial(6, 0.5) ≥ 4) = 0.34375."""
    from glauber_mlm import exact

    h = torch.zeros(6, 5, dtype=torch.float64)
    h[:, 3] = 4.0
    model = exact.PairwiseModel(torch.zeros(6, 6, 5, 5, dtype=torch.float64), h)
    x0 = torch.zeros(600, 6, dtype=torch.long)
    decode = lambda s: [row.tolist() for row in s]  # noqa: E731
    embed = lambda texts: np.array([np.mean(np.array(t) == 3) for t in texts])  # noqa: E731
    docs = np.repeat(np.arange(300), 2)
    calls = political.null_family_calls(Score(), embed, decode, model, x0, 0.5, 0.05, [3], docs, seed=3)
    by = calls.groupby("family")
    assert list(by.size().reindex(political.NULL_FAMILIES)) == [600] * 3 and (calls.rate == 0.5).all()
    assert by.called.mean()["clean text"] == 0 and (calls[calls.family == "clean text"].changed == 0).all()
    assert abs(by.changed.mean()["uniform edits"] - 0.5) < 0.03 and abs(by.changed.mean()["conditional edits"] - 0.5) < 0.03
    p, lo, hi = political.fraction_ci(calls[calls.family == "uniform edits"].called, docs, seed=0)
    assert lo <= 0.34375 <= hi
    full = political.null_family_calls(Score(), embed, decode, model, x0, 1.0, 0.05, [3], docs,
                                       families=("conditional edits",))
    assert set(full.family) == {"conditional edits"} and (full.called == 1).all()
    with pytest.raises(ValueError, match="one document per text"):
        political.null_family_calls(Score(), embed, decode, model, x0, 0.5, 0.05, [3], docs[:10])


def test_conditional_edits_change_the_share_of_sites_from_the_models_conditional():
    """The matched null of notebook 04's attraction check (issue 36): each site edited with probability `share`, to a
    token other than its own, drawn from the model's conditional given the unedited state (at low τ: its argmax)."""
    from glauber_mlm import exact

    h = torch.zeros(6, 5, dtype=torch.float64)
    h[:, 3] = 4.0                                              # every site prefers token 3, whatever its context
    model = exact.PairwiseModel(torch.zeros(6, 6, 5, 5, dtype=torch.float64), h)
    x0 = torch.zeros(400, 6, dtype=torch.long)
    x = political.conditional_edits(model, x0, 0.3, 0.05, seed=1)
    changed = x != x0
    assert abs(changed.float().mean().item() - 0.3) < 0.03 and (x[changed] == 3).all()
    assert torch.equal(political.conditional_edits(model, x0, 0.3, 0.05, seed=1), x)      # seeded
    assert torch.equal(political.conditional_edits(model, x0, 0.0, 0.05), x0)
    y = political.conditional_edits(model, torch.full((400, 6), 3), 1.0, 0.05, seed=2)
    assert (y != 3).all()                                      # never the current token, even where it is the mode


def test_a_planted_truth_never_carries_a_fraction_past_one():
    """The truth's lift above a reference stays a fraction: the effect, or half the room left above the reference."""
    from glauber_mlm.pages.planted.basin import planted_effect

    assert planted_effect(0.3, 0.2) == 0.2
    assert abs(planted_effect(0.81, 0.2) - 0.095) < 1e-12 and 0.81 + planted_effect(0.81, 0.2) < 1
