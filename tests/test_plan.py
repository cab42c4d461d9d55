"""`glauber-mlm plan` against the forwards that the notebooks' library calls really make, on the smoke profile.

Each test resolves a notebook's smoke parameters, runs the library functions of the notebook's cells on the same
grid (starting states drawn as the notebook draws them) through a model that counts its `logits` rows and calls,
and checks the plan: equal where every row stays in the batch, an upper bound where work leaves it.
"""
import json
import math

import numpy as np
import pytest
import torch

import glauber_mlm as gm
from glauber_mlm.measures import margins, semantic, twins
from glauber_mlm import exact
from glauber_mlm.book.plan import (EXACT_DESIGNS, PUBLISHED_CONFIGS, CountingModel, Rates, Work, calibrate,
                                   calibrate_exact, forward_flops, has_plan, main, meeting, model_shape,
                                   notebook_table, plan, resolved_parameters, seconds, solve_exact, timed_work)
from glauber_mlm.models.hf import DEFAULT_MODEL
from glauber_mlm.models.passages import load_passages, passage_pairs, sample_passages
from glauber_mlm.measures.rectangle import float64_twin
from glauber_mlm.rng import stream

pytestmark = pytest.mark.skipif(not (DEFAULT_MODEL / "model.safetensors").is_file(),
                                reason="the embedded default model is not built yet")


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Counting rows needs no speed: one thread keeps these tests quick on a shared machine (no spinning pool)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def mlm():
    return gm.load_mlm(device="cpu")


@pytest.fixture(scope="module")
def texts():
    return load_passages("embedded")


def smoke(name: str, **overrides) -> tuple[dict, list[Work]]:
    """The notebook's resolved smoke parameters and its plan (this notebook alone)."""
    return resolved_parameters(name, "smoke", None, overrides), plan([name], "smoke", overrides=overrides)[name]


def line(works: list[Work], part: str, n: int | None = None) -> Work:
    found = [w for w in works if w.part.startswith(part) and (n is None or w.n == n)]
    assert len(found) == 1, (part, n, works)
    return found[0]


def test_flops_formula_and_model_shapes():
    bert = model_shape("bert-base-uncased")
    h, inter, V, L = 768, 3072, 30522, 34
    assert forward_flops(bert, 32) == 12 * L * (8 * h * h + 4 * h * inter + 4 * L * h) + 2 * h * h + 2 * h * V
    assert forward_flops(bert, 32, head=False) == 12 * L * (8 * h * h + 4 * h * inter + 4 * L * h)
    distil = model_shape("distilbert-base-uncased")  # dim / hidden_dim / n_layers key names
    assert (distil.hidden, distil.intermediate, distil.layers) == (768, 3072, 6)
    assert model_shape("answerdotai/ModernBERT-base").intermediate == 1728  # GeGLU: 6hI counted as 4h(1.5I)
    config = json.loads((DEFAULT_MODEL / "config.json").read_text())
    embedded = model_shape(None)
    assert (embedded.hidden, embedded.layers) == (config["hidden_size"], config["num_hidden_layers"])
    assert model_shape(str(DEFAULT_MODEL)) == embedded
    assert model_shape(DEFAULT_MODEL.name) == embedded  # an embedded model by name, as load_mlm resolves it
    assert model_shape(None, "embedder").layers == 6  # all-MiniLM-L6-v2
    assert set(PUBLISHED_CONFIGS) >= {"bert-base-uncased", "roberta-base"}


def test_time_is_flops_over_rate_with_a_latency_floor():
    work = Work("chains", "bert-base-uncased", 32, rows=1000, calls=10)
    flops = 1000 * forward_flops(model_shape("bert-base-uncased"), 32)
    assert seconds(work, Rates(1e12, 1e11, 0.0, "")) == pytest.approx(flops / 1e12)
    assert seconds(Work("m", "bert-base-uncased", 32, 1000, 10, "float32"), Rates(1e12, 1e11, 0.0, "")) == \
        pytest.approx(flops / 1e11)
    assert seconds(work, Rates(1e18, 1e18, 2.0, "")) == 20.0  # 10 calls × 2 s
    assert seconds(Work("coupling", "Ising", 8, 10, 5, kind="exact"), Rates(1, 1, 1, "")) is None  # no exact rates


def test_exact_work_is_timed_at_its_steps_rows_and_coupling_reads():
    """A planted exact part: calls × step + rows × (row + n·q² × read), q = `states`."""
    rates = Rates(1, 1, 1, "", exact_step=1e-3, exact_row=2e-6, exact_read=1e-9)
    ising = Work("coupling", "Ising chain", 8, rows=1000, calls=10, kind="exact")
    assert seconds(ising, rates) == pytest.approx(10 * 1e-3 + 1000 * (2e-6 + 8 * 2**2 * 1e-9))
    pairwise = Work("rectangles", "pairwise model", 24, rows=5000, calls=3, kind="exact", states=64)
    assert seconds(pairwise, rates) == pytest.approx(3 * 1e-3 + 5000 * (2e-6 + 24 * 64**2 * 1e-9))
    assert seconds(Work("none", "Ising chain", 8, 0, 0, kind="exact"), rates) == 0.0


def test_runs_that_stop_at_meeting_are_timed_at_their_expected_length_unless_worst_case():
    # 10 pairs, budget 100, lag 4: 10 · (4 + 2 · 5) rows, 4 + 30 calls; each length capped at the budget
    assert meeting(10, 100, typical=5, slowest=30, lag=4) == (140, 34)
    assert meeting(10, 100, typical=500, slowest=900) == (2000, 100)
    assert meeting(10, 100, typical=8, slowest=2) == (160, 8)  # the slowest pair is never before the typical one
    rates = Rates(1, 1, 1, "", exact_step=1e-3, exact_row=1e-6)
    part = Work("pairs", "Ising chain", 8, rows=2000, calls=100, kind="exact", upper=True, expected=(140, 34))
    assert timed_work(part) == (140, 34) and timed_work(part, worst_case=True) == (2000, 100)
    assert seconds(part, rates) == pytest.approx(34e-3 + 140 * 1e-6)
    assert seconds(part, rates, worst_case=True) == pytest.approx(100e-3 + 2000 * 1e-6)
    assert timed_work(Work("p", "Ising chain", 8, 10, 5, expected=(50, 50))) == (10, 5)  # never above the bound
    lagged = Work("L-lag", "bert-base-uncased", 32, rows=1000, calls=100, upper=True, expected=(250, 20))
    flops = forward_flops(model_shape("bert-base-uncased"), 32)
    assert seconds(lagged, Rates(1e12, 1e12, 0.0, "")) == pytest.approx(250 * flops / 1e12)
    assert seconds(lagged, Rates(1e18, 1e18, 0.5, "")) == pytest.approx(10.0)  # 20 calls × 0.5 s
    assert seconds(lagged, Rates(1e18, 1e18, 0.5, ""), worst_case=True) == pytest.approx(50.0)


def test_the_exact_calibration_recovers_planted_rates():
    """`solve_exact` on step times built from known rates gives them back; the timed calibration gives rates ≥ 0."""
    step, row, read = 5e-4, 7e-7, 2e-9
    per_step = [step + 2 * pairs * (row + n * q**2 * read) for pairs, n, q, _ in EXACT_DESIGNS]
    assert solve_exact(per_step) == pytest.approx((step, row, read))
    with pytest.raises(ValueError, match="share n and q"):
        solve_exact(per_step, ((1, 8, 2, 1), (4, 16, 2, 1), (2, 8, 4, 1)))
    measured = calibrate_exact(reps=1)
    assert measured[0] > 0 and all(r >= 0 for r in measured)


def test_02_coupled_pairs_never_exceed_the_plan_and_match_it_when_none_can_meet(mlm, texts):
    name = "02_high_temperature_mixing"
    for budget in (None, 1):  # 1 step: pairs that differ at two sites or more cannot meet
        p, works = smoke(name, **({"budget": budget} if budget else {}))
        taus, seeds = p["temperatures"], p["seeds"]
        for n in sorted(p["lengths"]):
            starts = {s: passage_pairs(mlm, texts, n, p["pairs"], seed=stream(p["seed"], "grid pairs", n, s))
                      for s in range(seeds)}
            x0 = torch.cat([starts[s][0] for _ in taus for s in range(seeds)])
            y0 = torch.cat([starts[s][1] for _ in taus for s in range(seeds)])
            grid = [(tau, s, q) for tau in taus for s in range(seeds) for q in range(p["pairs"])]
            res = gm.coupling_times(mlm, x0, y0, p["budget"], temperature=torch.tensor([g[0] for g in grid]),
                                    seed=(p["seed"] * 1000 + n) * 1_000_000 + torch.arange(len(grid)), speculate=1)
            planned = line(works, "phase diagram", n)
            assert res.forward_rows <= planned.rows and planned.upper
            if budget == 1:
                assert ((x0 != y0).sum(1) >= 2).all()
                assert res.forward_rows == planned.rows
    p, works = smoke(name)
    for n in sorted(set(p["scaling_lengths"])):
        x0, y0, _ = passage_pairs(mlm, texts, n, p["scaling_pairs"], seed=stream(p["seed"], "pairs", n))
        k = len(p["scaling_temperatures"])
        temps = torch.tensor([tau for tau in p["scaling_temperatures"] for _ in range(p["scaling_pairs"])])
        res = gm.coupling_times(mlm, x0.repeat(k, 1), y0.repeat(k, 1), p["scaling_budget"], temperature=temps,
                                seed=(p["seed"] * 1000 + n) * 1_000_000 + 500_000 + torch.arange(len(temps)),
                                speculate=1)
        assert 0 < res.forward_rows <= line(works, "scaling study", n).rows


def test_03_chains_match_the_plan_exactly(mlm):
    p, works = smoke("03_metastability_traps")
    n, P, S = p["length"], p["starts"], p["seeds"]
    rows = load_passages(p["passages"])
    all_states, kept = mlm.encode([r["text"] for r in rows], n)
    x_starts = sample_passages(mlm, rows, n, P, seed=p["seed"])[0]
    cal_rows = np.sort(np.random.default_rng(p["seed"]).choice(len(kept), size=p["calibration_passages"], replace=False))
    counted = CountingModel(mlm)
    neighbours, _ = semantic.one_token_neighbours(counted, all_states[cal_rows], per_state=p["neighbours"],
                                                  temperature=1.0, seed=p["seed"])
    assert counted.rows == line(works, "calibration").rows
    PS = P * S
    trap = CountingModel(mlm)
    traj = gm.glauber(trap, torch.cat([x_starts[np.repeat(np.arange(P), S)]] * 2), p["steps"],
                      temperature=torch.tensor([p["temperature"]] * PS + [p["control_temperature"]] * PS),
                      seed=(p["seed"] + np.arange(PS)).tolist() * 2, record_every=p["record_every"], speculate=1)
    assert (trap.rows, trap.calls) == (line(works, "trap chains").rows, line(works, "trap chains").calls)
    taus = torch.tensor(p["temperatures"]).repeat_interleave(p["chains"])
    escape = CountingModel(mlm)
    reach = gm.glauber(escape, x_starts[np.tile(np.arange(p["chains"]) % P, len(p["temperatures"]))], p["reach_steps"],
                       temperature=taus, seed=p["seed"] + 1000, record_every=p["record_every"], speculate=1)
    assert (escape.rows, escape.calls) == (line(works, "escape chains").rows, line(works, "escape chains").calls)
    laws = CountingModel(mlm)   # the basin-free twins: one forward per site of each low-τ chain's start
    twins.model_site_laws(laws, x_starts[np.repeat(np.arange(P), S)], p["temperature"])
    assert (laws.rows, laws.calls) == (line(works, "basin-free twins").rows, line(works, "basin-free twins").calls)
    twin_records = math.prod(traj.states.shape[:1]) * p["null_copies"] * PS   # each twin recorded as its chain
    sentences = (len(cal_rows) + len(neighbours) + math.prod(traj.states.shape[:2]) + twin_records
                 + math.prod(reach.states.shape[:2]))
    assert sentences == line(works, "sentences embedded").rows


def test_04_chains_and_their_records_match_the_plan(mlm, texts):
    p, works = smoke("04_political_basins")
    pol = sample_passages(mlm, [r for r in texts if r.get("topic") == "politics"], p["length"], p["starts"],
                          seed=p["seed"])[0]
    other = sample_passages(mlm, [r for r in texts if r.get("topic") != "politics"], p["length"], p["starts"],
                            seed=p["seed"])[0]
    inits, temps = [], []
    for tau in p["temperatures"]:
        for x0 in (pol, other):
            for start in x0:
                inits += [start] * p["seeds"]
                temps += [tau] * p["seeds"]
    counted = CountingModel(mlm)
    traj = gm.glauber(counted, torch.stack(inits), p["steps"], temperature=torch.tensor(temps), seed=p["seed"],
                      record_every=p["record_every"], speculate=1)
    chains = line(works, "chains")
    assert (counted.rows, counted.calls) == (chains.rows, chains.calls)
    assert math.prod(traj.states.shape[:2]) == line(works, "chain records embedded").rows


def test_05_influence_chains_and_margins_against_the_plan(mlm, texts):
    p, works = smoke("05_influence_and_margin")
    taus = sorted(p["temperatures"])
    for n in sorted(p["lengths"]):
        counted = CountingModel(mlm)
        gm.influence_matrix(counted, sample_passages(mlm, texts, n, p["contexts"], seed=p["seed"] + n)[0], taus,
                            replacements=p["replacements"], top_k=p["top_k"], seed=p["seed"])
        planned = line(works, "influence matrix", n)
        assert (counted.rows, counted.calls) == (planned.rows, planned.calls)
    phase_taus = sorted(p["phase_temperatures"])
    for n in sorted(p["phase_lengths"]):  # 05 alone: its small phase diagram is in the plan
        x0, y0, _ = passage_pairs(mlm, texts, n, p["pairs"], seed=p["seed"] + 31 * n)
        grid = [tau for tau in phase_taus for _ in range(p["pairs"])]
        res = gm.coupling_times(mlm, x0.repeat(len(phase_taus), 1), y0.repeat(len(phase_taus), 1), p["budget"],
                                temperature=torch.tensor(grid),
                                seed=(p["seed"] * 1000 + n) * 1_000_000 + torch.arange(len(grid)), speculate=1)
        assert res.forward_rows <= line(works, "small phase diagram", n).rows
    L = p["chain_length"]
    starts = sample_passages(mlm, texts, L, p["chain_passages"], seed=p["seed"] + 7919)[0]
    grid = [(tau, q) for tau in sorted(p["chain_temperatures"]) for q in range(len(starts)) for _ in range(p["seeds"])]
    chain_temp = torch.tensor([tau for tau, _ in grid])
    counted = CountingModel(mlm)
    traj = gm.glauber(counted, torch.stack([starts[q] for _, q in grid]), p["steps"], chain_temp,
                      seed=stream(p["seed"], "chains", torch.arange(len(grid))), record_every=1, speculate=1)
    assert (counted.rows, counted.calls) == (line(works, "margin chains").rows, line(works, "margin chains").calls)
    counted = CountingModel(mlm)
    gm.local_margins(counted, traj.states[list(range(0, p["steps"] + 1, p["record_every"]))].reshape(-1, L))
    assert counted.rows == line(works, "local margins").rows
    d = margins.dwells(traj.changed, traj.states)
    g = torch.Generator().manual_seed(p["seed"])
    d_temp = chain_temp[d.chain]
    keep = torch.cat([idx[torch.randperm(idx.numel(), generator=g)[: p["dwell_states"]]]
                      for idx in (torch.nonzero(d_temp == tau).flatten() for tau in sorted(p["chain_temperatures"]))])
    counted = CountingModel(mlm)
    margins.token_margins(counted, torch.unique(d.states[keep], dim=0))
    assert 0 < counted.rows <= line(works, "token margins").rows


def test_06_chains_energies_and_pairs_against_the_plan(mlm, texts):
    p, works = smoke("06_has_my_chain_mixed")
    taus, n, S = sorted(p["temperatures"]), p["length"], p["steps"]
    T, C, P, M, Q = len(taus), p["chains"], p["pairs"], p["mh_chains"], p["mh_pairs"]
    starts, _ = sample_passages(mlm, texts, n, C, seed=stream(p["seed"], "starts", n))
    x0, y0, _ = passage_pairs(mlm, texts, n, P, seed=stream(p["seed"], "pairs", n))
    counted = CountingModel(mlm)
    traj = gm.glauber(counted, starts.repeat(T, 1), S, temperature=torch.tensor(taus).repeat_interleave(C),
                      seed=p["seed"] * 1_000_000 + torch.arange(T * C), speculate=1)
    assert (counted.rows, counted.calls) == (line(works, "Glauber chains").rows, line(works, "Glauber chains").calls)
    counted = CountingModel(mlm)
    gm.pseudo_log_likelihood(counted, traj.states[::p["pll_every"]].flatten(0, 1))
    assert (counted.rows, counted.calls) == (line(works, "PLL energy").rows, line(works, "PLL energy").calls)
    res = gm.coupling_times(mlm, x0.repeat(T, 1), y0.repeat(T, 1), S,
                            temperature=torch.tensor(taus).repeat_interleave(P),
                            seed=p["seed"] * 1_000_000 + 500_000 + torch.arange(T * P), speculate=1)
    assert res.forward_rows <= line(works, "coupled Glauber pairs").rows
    counted = CountingModel(mlm)
    mh = gm.metropolis(counted, starts[:M].repeat(T, 1), S, temperature=torch.tensor(taus).repeat_interleave(M),
                       seed=p["seed"] * 1_000_000 + 600_000 + torch.arange(T * M))
    planned = line(works, "MH chains (proposals")
    assert mh.forward_rows == counted.rows <= planned.rows and counted.calls <= planned.calls and planned.upper
    for L in sorted(set(p["mh_lengths"]) - {n}):
        counted = CountingModel(mlm)
        other = sample_passages(mlm, texts, L, M, seed=stream(p["seed"], "starts", L))[0]
        gm.metropolis(counted, other.repeat(T, 1), S, temperature=torch.tensor(taus).repeat_interleave(M),
                      seed=p["seed"] * 1_000_000 + 600_000 + 1_000 * (L - n) + torch.arange(T * M))
        planned = line(works, f"MH chains at n = {L}")
        assert counted.rows <= planned.rows and counted.calls <= planned.calls and planned.n == L
    counted = CountingModel(mlm)
    res = gm.mh_coupling_times(counted, x0[:Q].repeat(T, 1), y0[:Q].repeat(T, 1), S,
                               temperature=torch.tensor(taus).repeat_interleave(Q),
                               seed=p["seed"] * 1_000_000 + 700_000 + torch.arange(T * Q))
    planned = line(works, "coupled MH pairs")
    assert res.forward_rows == counted.rows <= planned.rows and counted.calls <= planned.calls


def test_05_reads_02s_phase_diagram_when_both_are_planned():
    works = plan(["02_high_temperature_mixing", "05_influence_and_margin"], "smoke")
    assert not any(w.part.startswith("small phase diagram") for w in works["05_influence_and_margin"])


def test_01_rectangles_against_the_plan(mlm, texts):
    p, works = smoke("01_rectangle_test")
    assert p["models"] == [None]
    ctx = sample_passages(mlm, texts, p["length"], p["contexts"], seed=p["seed"])[0]
    R = p["contexts"] * p["per_passage"]
    counted = CountingModel(mlm)
    counted.logits(ctx[: min(64, len(ctx))], torch.arange(min(64, len(ctx))) % ctx.shape[1], dtype=torch.float32)
    assert counted.rows == line(works, "logit probe").rows
    drawn, tested = CountingModel(mlm), CountingModel(mlm)
    rects = gm.random_rectangles(drawn, ctx, p["per_passage"], top_k=p["top_k"], seed=p["seed"])
    gm.rectangle_test(tested, rects, chunk=128)
    assert drawn.rows == line(works, "rectangles: top-k draws").rows == 2 * R
    assert 0 < tested.rows <= line(works, "rectangles: rectangle_test").rows
    twin = CountingModel(float64_twin(mlm))
    m = min(64, R)
    gm.rectangle_test(twin, gm.Rectangles(*(getattr(rects, f)[:m] for f in ("contexts", "i", "j", "a", "a2", "b", "b2"))))
    assert twin.rows <= line(works, "float64 twin").rows
    counted = CountingModel(mlm)
    small = gm.random_rectangles(counted, ctx[:8], 2, top_k=p["top_k"], seed=p["seed"] + 1)
    for tau in [1.0, *p["temperatures"]]:
        gm.rectangle_test(counted, small, temperature=tau)
    assert counted.rows <= line(works, "ρ against temperature").rows


def test_00_mlm_rectangles_and_exact_chains_against_the_plan(mlm, texts):
    p, works = smoke("00_exact_models")
    n_rect = p["rectangles"]
    contexts = sample_passages(mlm, texts, p["rect_length"], min(n_rect, 64), seed=p["seed"])[0]
    drawn, tested = CountingModel(mlm), CountingModel(mlm)
    rects = gm.random_rectangles(drawn, contexts[torch.arange(n_rect) % contexts.shape[0]], 1, top_k=10, seed=p["seed"])
    gm.rectangle_test(tested, rects)
    assert drawn.rows == line(works, "rectangles: top-k draws").rows
    assert 0 < tested.rows <= line(works, "rectangles: rectangle_test").rows
    q, sites = p["law_states"], p["law_sites"]
    field = torch.zeros(q, dtype=torch.float64)
    field[0] = 0.5
    potts = CountingModel(exact.potts_chain(sites, q, p["coupling"], field=field))
    init = torch.randint(q, (p["chains"], sites), generator=torch.Generator().manual_seed(p["seed"]))
    for scan in ("random", "systematic"):
        gm.glauber(potts, init, p["sweeps"] * sites, p["law_temperature"], seed=p["seed"] + 1, scan=scan,
                   record_every=sites)
    planned = line(works, "Potts chains")
    assert (potts.rows, potts.calls) == (planned.rows, planned.calls)
    n = max(p["lengths"])
    x0, y0 = (torch.randint(2, (p["pairs"], n), generator=torch.Generator().manual_seed(s)) for s in (1, 2))
    res = gm.coupling_times(exact.potts_chain(n, 2, p["coupling"]), x0, y0, p["budget"], max(p["temperatures"]), seed=0)
    planned = line(works, "Ising coupling, high τ", n)
    assert res.forward_rows <= planned.rows / len(p["temperatures"])
    if planned.expected is not None and len(p["temperatures"]) == 1:  # the rows it expects: within a factor of 2
        assert planned.expected[0] / 2 <= res.forward_rows <= 2 * planned.expected[0]


def test_calibration_measures_positive_rates(mlm, tmp_path):
    rates = calibrate(None, 8, device="cpu", cache=tmp_path / "rates.json")
    assert rates.default > 0 and rates.float32 > 0 and rates.latency > 0
    assert rates.times_exact and rates.exact_step > 0 and rates.startup > 0
    assert "rows/s" in rates.source and "cpu" in rates.source and "exact models" in rates.source
    assert "the embedded model" in rates.source and "kernel start" in rates.source


def test_model_free_rates_are_timed_once_per_machine(tmp_path, monkeypatch):
    """The exact-model rates and a kernel's start do not depend on the user's model: timed once, then read back
    while the machine and the code timed are the same, and timed again when either differs."""
    from glauber_mlm.book import plan as plan_module

    timings = []
    monkeypatch.setattr(plan_module, "calibrate_exact", lambda: timings.append("exact") or (1e-3, 2e-6, 3e-9))
    monkeypatch.setattr(plan_module, "time_startup", lambda: timings.append("startup") or 4.5)
    cache = tmp_path / "machine_rates.json"
    first = plan_module.machine_rates(cache)
    second = plan_module.machine_rates(cache)
    assert timings == ["exact", "startup"]
    assert first["exact"] == second["exact"] == (1e-3, 2e-6, 3e-9) and second["startup"] == 4.5
    assert "timed now" in first["origin"] and "timed on this machine" in second["origin"]
    stored = json.loads(cache.read_text())
    stored["key"]["cpu"] = "another CPU"
    cache.write_text(json.dumps(stored))
    plan_module.machine_rates(cache)
    assert timings == ["exact", "startup"] * 2
    cache.write_text("{not json")
    plan_module.machine_rates(cache)
    assert len(timings) == 6


def test_plan_times_the_model_it_plans_for(tmp_path, monkeypatch):
    """`plan --model M --calibrate` times M (the model the user plans for), not the embedded model, and adds each
    page's kernel start to its time."""
    from glauber_mlm.book import plan as plan_module

    timed = []

    def fake_calibrate(reference, n, device=None, cache=None):
        timed.append(reference)
        return Rates(1e12, 1e12, 1e-3, f"calibrated with {reference}", 1e-4, 1e-7, 1e-10, startup=7.0)

    monkeypatch.setattr(plan_module, "calibrate", fake_calibrate)
    folder = str(DEFAULT_MODEL)
    assert main(["plan", "--profile", "smoke", "--only", "07_how_long_must_i_run", "--model", folder,
                 "--calibrate"]) == 0
    assert timed == [folder]
    works = plan(["07_how_long_must_i_run"], "smoke")["07_how_long_must_i_run"]
    rates = fake_calibrate(None, 32)
    assert plan_module.notebook_seconds(works, rates) == pytest.approx(
        7.0 + sum(seconds(w, rates) or 0.0 for w in works))


def test_command_prints_every_notebook_and_the_verdict(capsys):
    assert main(["plan", "--profile", "smoke", "--tflops", "1", "--latency-ms", "2", "--target-hours", "1"]) == 0
    out = capsys.readouterr().out
    for name in ("00_exact_models", "01_rectangle_test", "02_high_temperature_mixing", "03_metastability_traps",
                 "04_political_basins", "05_influence_and_margin", "06_has_my_chain_mixed", "07_how_long_must_i_run",
                 "## Summary"):
        assert name in out
    assert "target: 1 h; estimated" in out and ": fits." in out
    assert "exact models counted, not timed" in out  # given rates time no exact model
    assert main(["plan", "--profile", "smoke", "--only", "00_exact_models", "--tflops", "1", "--worst-case"]) == 0
    assert "every part timed at its bound" in capsys.readouterr().out


def test_command_overrides_apply_to_the_notebooks_that_declare_them(capsys):
    assert main(["plan", "--profile", "smoke", "--only", "02_high_temperature_mixing", "05_influence_and_margin",
                 "-p", "budget", "7"]) == 0
    out = capsys.readouterr().out
    p02, p05 = (resolved_parameters(n, "smoke", None, {"budget": 7}) for n in ("02_high_temperature_mixing",
                                                                               "05_influence_and_margin"))
    assert p02["budget"] == p05["budget"] == 7
    rows = 2 * len(p02["temperatures"]) * p02["seeds"] * p02["pairs"] * 7
    assert f"| ≤ {rows:,} (~ " in out  # the bound at the overridden budget, beside the rows 02 expects


@pytest.mark.parametrize("argv, message", [
    (["-p", "budgett", "5"], "has parameter 'budgett'"),
    (["--profile", "papr"], "unknown profile 'papr'"),
    (["--model", "some-org/unknown-mlm"], "pass its local folder"),
    (["--throughput", "1", "2", "3"], "one or two finite numbers"),
    (["--only", "04_political_basins", "-p", "passages", "ms_marco"], "needs passages='embedded'"),
])
def test_command_refuses_bad_input_naming_the_fix(argv, message, capsys):
    assert main(["plan", "--profile", "smoke", *argv]) == 1
    assert message in capsys.readouterr().err


def test_07_lag_runs_and_exact_models_against_the_plan(mlm, texts):
    """The L-lag runs of each length (the library's own row count) and the tempering rows never exceed the plan."""
    from glauber_mlm.samplers.lag_coupling import lag_coupling
    from glauber_mlm.samplers.tempering import ladder, replica_exchange

    p, works = smoke("07_how_long_must_i_run")
    taus, P = sorted(p["temperatures"]), p["pairs"]
    T = len(taus)
    for n in sorted(set(p["lengths"])):
        x0, y0, _ = passage_pairs(mlm, texts, n, P, seed=stream(p["seed"], "pairs", n))
        res = lag_coupling(mlm, x0.repeat(T, 1), y0.repeat(T, 1), p["lag"], p["budget"],
                           temperature=torch.tensor(taus).repeat_interleave(P),
                           seed=p["seed"] * 1_000_000 + 800_000 + 10_000 * n + torch.arange(T * P))
        planned = line(works, "L-lag runs", n)
        assert T * P * p["lag"] < res.forward_rows <= planned.rows and planned.upper
        if planned.expected is not None:  # the rows the notebook expects: within a factor of 2 of the run's
            assert planned.expected[0] / 2 <= res.forward_rows <= 2 * planned.expected[0]
    wells = exact.potts_chain(p["well_length"], 2, coupling=p["well_coupling"])
    start = torch.zeros(p["ensembles"], p["well_length"], dtype=torch.int64)
    temp = replica_exchange(wells, start, ladder(1.0, p["hot"], p["rungs"]), p["rounds"], p["steps_per_round"],
                            seed=p["seed"], energy="joint")
    plain = gm.metropolis(wells, start, p["rungs"] * p["rounds"] * p["steps_per_round"], 1.0, seed=p["seed"],
                          energy="joint", record_every=p["steps_per_round"])
    assert temp.forward_rows + plain.forward_rows <= line(works, "replica exchange").rows
    # section 5: the unbiased estimate and its plain run at the same rows, at the longest length and highest τ
    from glauber_mlm.pages.report.unbiased_estimate import continuation_share, unbiased_against_plain

    x_u, y_u, _ = passage_pairs(mlm, texts, n, P, seed=stream(p["seed"], "pairs", n, 1))
    table = unbiased_against_plain(mlm, x_u, y_u, continuation_share(mlm), taus[-1], p["lag"],
                                   res.meeting_times[(T - 1) * P:], p["budget"], seed=0)
    assert 0 < table.forward_rows.sum() <= line(works, "unbiased estimate").rows


# ---- the plan reads each notebook's own counting rule (issue 27, item 4) -----------------------------------------

TOY = '''\
# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% tags=["parameters"]
profile = "cpu"
dtype = None
scale = 1.0
output_dir = None

# %%
from glauber_mlm.pages.run import Run

PROFILES = {"smoke": dict(model=None, chains=3, steps=10), "cpu": dict(model=None, chains=5, steps=100),
            "paper": dict(model="bert-base-uncased", chains=50, steps=1000)}
BUDGETS = dict(steps=2)
run = Run("90_toy", profile, PROFILES, output_dir, scale=scale, dtype=dtype, budgets=BUDGETS, overrides=globals())

# %% tags=["plan"]
from glauber_mlm.book.plan import Work, show_plan

ROWS_PER_STEP = 1


def planned_work(p: dict) -> list[Work]:
    """chains × steps rows, one call a step."""
    return [Work("chains", p["model"], 8, ROWS_PER_STEP * p["chains"] * p["steps"], p["steps"])]


show_plan(planned_work(run.params))
'''


TOY_PAIRS = '''    return [Work("chains", p["model"], 8, ROWS_PER_STEP * p["chains"] * p["steps"], p["steps"]),
            Work("pairs", "Ising chain", 8, 2 * p["chains"] * p["steps"], p["steps"], kind="exact", upper=True,
                 states=3, expected=meeting(p["chains"], p["steps"], TYPICAL, SLOWEST))]
'''


def test_a_notebook_declares_expected_lengths_and_states(tmp_path):
    """A plan cell's `expected` (from `meeting`, with its constants) and `states` reach the plan, its table and time."""
    toy = TOY.replace("import Work, show_plan", "import Work, meeting, show_plan").replace(
        "ROWS_PER_STEP = 1\n", "ROWS_PER_STEP = 1\nTYPICAL = 4\nSLOWEST = 9\n").replace(
        '''    return [Work("chains", p["model"], 8, ROWS_PER_STEP * p["chains"] * p["steps"], p["steps"])]\n''', TOY_PAIRS)
    (tmp_path / "93_toy.py").write_text(toy.replace("90_toy", "93_toy"))
    pairs = plan(["93_toy"], "cpu", notebooks_dir=tmp_path)["93_toy"][1]
    assert (pairs.rows, pairs.calls, pairs.states, pairs.expected) == (1000, 100, 3, (5 * 2 * 4, 9))
    rates = Rates(1, 1, 1, "", exact_step=1e-3, exact_row=1e-6)
    assert seconds(pairs, rates) == pytest.approx(9e-3 + 40e-6)
    table = notebook_table([pairs], rates)
    assert "≤ 1,000 (~ 40 expected)" in table and "100 (~ 9)" in table and "q = 3" in table


def test_the_plan_runs_the_notebooks_own_counting_rule(tmp_path):
    (tmp_path / "90_toy.py").write_text(TOY)
    assert plan(["90_toy"], "cpu", notebooks_dir=tmp_path) == {"90_toy": [Work("chains", None, 8, 500, 100)]}
    assert plan(["90_toy"], "paper", notebooks_dir=tmp_path)["90_toy"] == [Work("chains", "bert-base-uncased", 8, 50_000, 1000)]
    assert plan(["90_toy"], "cpu", overrides={"steps": 7}, notebooks_dir=tmp_path)["90_toy"][0].rows == 35
    assert plan(["90_toy"], "cpu", notebooks_dir=tmp_path, scale=0.5)["90_toy"][0].calls == 50  # BUDGETS scaled
    with pytest.raises(ValueError, match="no notebook among 90_toy has parameter 'stepz'"):
        plan(["90_toy"], "cpu", overrides={"stepz": 7}, notebooks_dir=tmp_path)
    # a notebook without a plan cell is refused, naming what to add
    (tmp_path / "91_bare.py").write_text(TOY.replace('# %% tags=["plan"]', "# %%").replace("90_toy", "91_bare"))
    assert has_plan("90_toy", tmp_path) and not has_plan("91_bare", tmp_path) and not has_plan("92_absent", tmp_path)
    with pytest.raises(ValueError, match="91_bare.py has no cell tagged 'plan'.*planned_work"):
        plan(["91_bare"], "cpu", notebooks_dir=tmp_path)


def test_every_notebook_declares_its_plan_and_the_library_copies_none():
    from glauber_mlm import book
    from glauber_mlm.book import plan as plan_module

    assert all(has_plan(name) for name in book.known_notebooks())
    assert not [name for name in vars(plan_module) if name.startswith("count_") or name == "COUNTERS"]
