"""Replica exchange against exact laws on a two-well Ising chain: the cold replica finds both wells, plain MH
with the same forward rows does not; swap rates equal their exact stationary values; round trips are counted."""
import numpy as np
import pytest
import torch

from glauber_mlm import exact, metropolis
from glauber_mlm.exact.calibration import chain_counts
from glauber_mlm.samplers.metropolis import pseudo_log_likelihood
from glauber_mlm.exact.scan_order import all_states
from glauber_mlm.stats import tv_null_test
from glauber_mlm.samplers.tempering import (always_swap, basins_visited, ladder, plain_at_rows, replica_exchange, swap_log_ratio,
                                   track_round_trips)

N, Q, J = 5, 2, 8.0  # wells all-0 and all-1, each ≈ 1/2; leaving one costs a wall of weight e^{-8}
ENSEMBLES, RUNGS, ROUNDS, STEPS = 48, 6, 300, 5


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def two_wells():
    return exact.potts_chain(N, Q, coupling=J)


@pytest.fixture(scope="module")
def tempered(two_wells):
    start = torch.zeros(ENSEMBLES, N, dtype=torch.int64)  # every chain in the all-0 well
    return replica_exchange(two_wells, start, ladder(1.0, 8.0, RUNGS), ROUNDS, STEPS, seed=0, energy="joint")


def test_cold_replica_has_the_exact_law_where_plain_mh_does_not(two_wells, tempered):
    law = two_wells.joint(1.0)[1].numpy()
    burn = ROUNDS * STEPS // 2
    cold = tv_null_test(chain_counts(tempered.cold[burn:], Q), law)
    assert cold["p_value"] > 0.01 and cold["tv"] < cold["null_high"], cold
    # plain MH at τ = 1 with the same forward rows: the same chains, RUNGS times as many steps, from the same start
    start = torch.zeros(ENSEMBLES, N, dtype=torch.int64)
    plain = metropolis(two_wells, start, RUNGS * ROUNDS * STEPS, 1.0, seed=0, energy="joint", record_every=5)
    assert plain.forward_rows == tempered.forward_rows
    stuck = tv_null_test(chain_counts(plain.states[plain.states.shape[0] // 2:], Q), law)
    assert stuck["p_value"] < 0.001 and stuck["tv"] > 0.2, stuck
    # the tempered cold chains each visit both wells; most plain chains never leave the first
    both = lambda records: ((records.sum(-1) == 0).any(0) & (records.sum(-1) == N).any(0)).float().mean()  # noqa: E731
    assert both(tempered.cold) > 0.95 and both(plain.states) < 0.5


def test_the_check_rejects_a_wrong_swap_rule(two_wells):
    """Accepting every swap carries hot states down unweighted: the same test must see the wrong cold law."""
    start = torch.zeros(ENSEMBLES, N, dtype=torch.int64)
    wrong = replica_exchange(two_wells, start, ladder(1.0, 8.0, RUNGS), ROUNDS // 2, STEPS, seed=0, energy="joint",
                             swap_rule=always_swap)
    assert (wrong.swap_rates == 1).all()
    got = tv_null_test(chain_counts(wrong.cold[ROUNDS * STEPS // 4:], Q), two_wells.joint(1.0)[1].numpy())
    assert got["p_value"] < 0.001, got


def test_swap_rates_match_their_exact_stationary_values(two_wells):
    """Replicas started from exact draws of π_k stay stationary; the swap rate between τ_k and τ_{k+1} is then
    E_{π_k ⊗ π_{k+1}}[min(1, exp((E(x) − E(y))(1/τ_k − 1/τ_{k+1})))], by enumeration."""
    taus = ladder(1.0, 8.0, 4)
    states, _ = two_wells.joint(1.0)
    E = -two_wells.energy(states)
    laws = [two_wells.joint(float(t))[1] for t in taus]
    g = torch.Generator().manual_seed(1)
    B = 400
    init = torch.stack([states[torch.multinomial(law, B, replacement=True, generator=g)] for law in laws], 1)
    res = replica_exchange(two_wells, init, taus, 40, 2, seed=7, energy="joint")
    for k in range(3):
        ratio = torch.exp(swap_log_ratio(E[:, None], E[None, :], float(taus[k]), float(taus[k + 1])).clamp_max(0))
        exact_rate = float(laws[k] @ ratio @ laws[k + 1])
        n = res.swaps_proposed[k]
        assert n == B * 20
        se = np.sqrt(exact_rate * (1 - exact_rate) / B)  # ensembles are independent; rounds of one are correlated
        assert abs(res.swap_rates[k] - exact_rate) < 4 * se, (k, res.swap_rates[k], exact_rate)


def test_energies_and_records(two_wells, tempered):
    assert tempered.cold.shape == (ROUNDS * STEPS + 1, ENSEMBLES, N)
    assert (tempered.steps == torch.arange(ROUNDS * STEPS + 1)).all()
    assert (tempered.swaps_proposed[::2] == ENSEMBLES * (ROUNDS // 2)).all()
    assert (0 < tempered.swap_rates).all() and (tempered.swap_rates < 1).all()
    assert tempered.round_trips.mean() > 5
    assert tempered.forward_rows == ENSEMBLES * RUNGS * ROUNDS * STEPS  # the joint energy costs no forward row


def test_round_trips_are_counted_on_a_planted_sequence():
    """K = 3, one ensemble (labels[k]: the replica in slot k): replica 0 goes cold → middle → hot → hot → cold (one
    trip), then hot and back (two)."""
    phase = torch.zeros(1, 3, dtype=torch.int8)
    phase[0, 0] = 1
    path = [[0, 1, 2], [1, 0, 2], [2, 1, 0], [1, 2, 0], [0, 2, 1], [2, 1, 0], [0, 1, 2]]
    trips = [int(track_round_trips(torch.tensor([p]), phase)[0]) for p in path]
    assert trips == [0, 0, 0, 0, 1, 0, 1]
    # replica 1 went cold (step 1), then hot (step 4), and has not come back: half a trip
    assert phase[0, 1] == 2


def test_a_run_is_a_function_of_its_seed(two_wells):
    start = torch.zeros(4, N, dtype=torch.int64)
    a, b = (replica_exchange(two_wells, start, [1.0, 2.0, 4.0], 20, 3, seed=5, energy="joint") for _ in range(2))
    c = replica_exchange(two_wells, start, [1.0, 2.0, 4.0], 20, 3, seed=6, energy="joint")
    assert torch.equal(a.cold, b.cold) and (a.swaps_accepted == b.swaps_accepted).all()
    assert not torch.equal(a.cold, c.cold)


def test_pll_energy_on_an_incompatible_model_gives_the_exact_pll_law():
    """On incompatible conditionals the target is π_PLL^τ ∝ exp(PLL/τ): an energy exists, so swaps are defined, and
    the cold replica's law is π_PLL at τ_0, enumerated."""
    model = exact.incompatible_pairwise(3, 3, scale=1.5, seed=2)
    res = replica_exchange(model, torch.zeros(32, 3, dtype=torch.int64), [0.5, 1.0, 2.0], 100, 4, seed=0)
    assert res.forward_rows > 32 * 3 * 100 * 4  # PLL energies cost n rows per evaluation
    assert np.isfinite(res.swap_rates).all() and (res.swap_rates > 0.3).all()
    pll = pseudo_log_likelihood(model, all_states(3, 3))
    law = torch.softmax(pll / 0.5, 0).numpy()
    got = tv_null_test(chain_counts(res.cold[100:], 3), law)
    assert got["p_value"] > 0.01, got


def test_bad_input_is_refused_with_the_fix(two_wells):
    start = torch.zeros(2, N, dtype=torch.int64)
    with pytest.raises(ValueError, match="strictly increasing"):
        replica_exchange(two_wells, start, [2.0, 1.0], 2)
    with pytest.raises(ValueError, match="strictly increasing"):
        replica_exchange(two_wells, start, [1.0], 2)
    with pytest.raises(ValueError, match="must divide"):
        replica_exchange(two_wells, start, [1.0, 2.0], 2, steps_per_round=3, record_every=2)
    with pytest.raises(ValueError, match="temperatures"):
        replica_exchange(two_wells, torch.zeros(2, 3, N, dtype=torch.int64), [1.0, 2.0], 2)
    with pytest.raises(ValueError, match="hottest"):
        ladder(2.0, 1.0, 4)
    with pytest.raises(ValueError, match="temperature must be finite and > 0"):
        ladder(0.0, 1.0, 4)


def test_plain_at_rows_spends_the_rows_asked_and_keeps_the_law():
    """Chunks continue one chain: on a small well-mixing chain the pooled records match the exact law, and the cost
    is the rows asked to within one chunk (joint energy: one row a chain-step)."""
    model = exact.potts_chain(4, 2, coupling=0.5)
    start = torch.zeros(16, 4, dtype=torch.int64)
    run = plain_at_rows(model, start, 1.0, rows=16 * 1990, chunk_steps=100, seed=3, energy="joint", record_every=5)
    assert run.forward_rows == 16 * 2000  # 20 chunks of 100 steps: the first total at or above the rows asked
    assert run.states.shape == (401, 16, 4) and (torch.diff(run.steps) == 5).all() and run.steps[-1] == 2000
    assert torch.equal(run.states[-1], run.final)
    got = tv_null_test(chain_counts(run.states[40:], 2), model.joint(1.0)[1].numpy())
    assert got["p_value"] > 0.01, got
    again = plain_at_rows(model, start, 1.0, rows=16 * 1990, chunk_steps=100, seed=3, energy="joint", record_every=5)
    assert torch.equal(again.states, run.states)
    with pytest.raises(ValueError, match="must divide"):
        plain_at_rows(model, start, 1.0, rows=10, chunk_steps=10, energy="joint", record_every=3)


def test_basins_visited_on_planted_trajectories():
    """Chain 0 sits at A, moves to B, returns to A: two basins (three traps). Chain 1 sits at A: one. Chain 2 moves
    by more than the radius every record: no trap, no basin. Chain 3 visits A, B and C, each for too short a time
    but C: one basin."""
    a, b, c = np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([-1.0, 0.0])
    T = 30
    emb = np.zeros((T, 4, 2))
    emb[:, 0] = [a] * 10 + [b] * 10 + [a] * 10
    emb[:, 1] = a
    emb[:, 2] = np.stack([np.arange(T), np.zeros(T)], 1)
    emb[:, 3] = [a] * 3 + [b] * 3 + [c] * 24
    steps = np.arange(T) * 10
    assert basins_visited(emb, steps, radius=0.5, min_dwell=50).tolist() == [2, 1, 0, 1]
    # a radius wider than the distance between A and B merges them into one basin
    assert basins_visited(emb, steps, radius=1.5, min_dwell=50)[0] == 1
