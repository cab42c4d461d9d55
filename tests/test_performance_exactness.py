"""Speed-ups that must not change a single draw: speculative sites, cached bf16 weights, SDPA attention."""
import math

import pytest
import torch
from scipy.stats import chi2

from glauber_mlm import exact, glauber, load_mlm
from glauber_mlm.models.roofline import Shape, shape_from_config, speculation_knee
from glauber_mlm.samplers.sampling import speculation_width, speculation_widths
from tiny_models import save_family, save_tiny

FIELDS = ("states", "steps", "sites", "changed", "final")
BASE = torch.tensor([27, 9, 3, 1])  # state → index for 4 sites, q = 3


def same_trajectory(a, b) -> bool:
    return all(torch.equal(getattr(a, f), getattr(b, f)) for f in FIELDS)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    return load_mlm(save_tiny(tmp_path_factory.mktemp("bert")), device="cpu", dtype=torch.float32)


@pytest.mark.parametrize("scan", ["random", "systematic"])
@pytest.mark.parametrize("k", [2, 3, 8, 16])
@pytest.mark.parametrize("record_every", [1, 4, 7])
def test_speculation_gives_the_plain_trajectory_on_exact_models(scan, k, record_every):
    """Same seeds, same draws: states, recorded steps, sites, change flags and final state all equal."""
    model = exact.incompatible_pairwise(6, 4, scale=1.5, seed=1)
    init = torch.randint(0, 4, (12, 6), generator=torch.Generator().manual_seed(0))
    taus = torch.tensor([0.1, 0.3, 1.0, 3.0]).repeat(3)  # low τ keeps most tokens: long speculative runs
    plain = glauber(model, init, 61, temperature=taus, seed=5, scan=scan, record_every=record_every, speculate=1)
    spec = glauber(model, init, 61, temperature=taus, seed=5, scan=scan, record_every=record_every, speculate=k)
    assert same_trajectory(plain, spec)
    assert 0.05 < plain.changed.float().mean() < 0.95  # both kept and changed steps occur


def test_speculation_gives_the_plain_trajectory_on_a_potts_chain():
    model = exact.potts_chain(5, q=3, coupling=1.2)
    init = torch.zeros(20, 5, dtype=torch.long)
    plain = glauber(model, init, 100, temperature=0.4, seed=11, record_every=3, speculate=1)
    assert same_trajectory(plain, glauber(model, init, 100, temperature=0.4, seed=11, record_every=3, speculate=5))


@pytest.mark.parametrize("scan", ["random", "systematic"])
def test_speculation_gives_the_plain_trajectory_on_tiny_bert_fp32(tiny_bert, scan):
    """On a real transformer in fp32: the conditionals of a wider batch give the same draws."""
    support = torch.nonzero(tiny_bert.support).flatten()
    init = support[torch.randint(support.numel(), (6, 10), generator=torch.Generator().manual_seed(2))]
    taus = torch.tensor([0.05, 0.2, 1.0]).repeat(2)
    plain = glauber(tiny_bert, init, 40, temperature=taus, seed=3, scan=scan, record_every=5, speculate=1)
    for k in (2, 6):
        spec = glauber(tiny_bert, init, 40, temperature=taus, seed=3, scan=scan, record_every=5, speculate=k)
        assert same_trajectory(plain, spec)


def test_speculative_chain_law_matches_exact_joint():
    """The stationary-law chi-square test (as in test_sampling) with k = 4 sites evaluated ahead."""
    potts = exact.potts_chain(4, q=3, coupling=0.8, field=torch.tensor([0.3, 0.0, -0.2]))
    traj = glauber(potts, torch.zeros(6000, 4, dtype=torch.long), steps=80, temperature=0.7, seed=0, speculate=4)
    counts = torch.bincount((traj.final * BASE).sum(1), minlength=81).double()
    expected = potts.joint(0.7)[1] * counts.sum()
    stat = float(((counts - expected) ** 2 / expected).sum())
    assert stat < chi2.ppf(1 - 1e-4, df=80)


class CheapRows:
    """An exact model that declares a forward's fixed cost of 32 rows, so `speculate=None` speculates on it."""

    def __init__(self, model):
        self.model, self.forwards = model, 0

    def __getattr__(self, name):
        return getattr(self.model, name)

    def speculation_knee(self, n, dtype=None):
        return 32.0

    def logits(self, states, sites, dtype=None):
        self.forwards += 1
        return self.model.logits(states, sites, dtype)


def test_speculation_width_follows_the_change_rate_and_the_knee():
    assert speculation_width(0.0, 4, 0.01) == 1  # no fixed cost: rows are never free
    assert speculation_width(64.0, 4, 0.01) == 16  # most steps keep their token: many sites ahead
    assert speculation_width(64.0, 4, 1.0) == 1  # every step changes: sites ahead are wasted
    assert speculation_width(64.0, 256, 0.01) == 1  # a wide batch: its rows are not free
    assert 1 < speculation_width(64.0, 4, 0.3) < 16
    assert speculation_widths(8.0, 4) == (1, 2, 4)
    with pytest.raises(ValueError, match="speculate"):
        glauber(exact.potts_chain(3), torch.zeros(2, 3, dtype=torch.long), 5, speculate=0)


@pytest.mark.parametrize("record_every", [1, 5])
def test_adaptive_speculation_gives_the_plain_trajectory(record_every):
    """k chosen before every forward from the change rate: the same draws as k = 1, in fewer forwards."""
    model = CheapRows(exact.incompatible_pairwise(6, 4, scale=1.5, seed=1))
    init = torch.randint(0, 4, (4, 6), generator=torch.Generator().manual_seed(0))
    taus = torch.tensor([0.1, 0.2, 0.3, 3.0])
    plain = glauber(model, init, 200, temperature=taus, seed=5, record_every=record_every, speculate=1)
    model.forwards = 0
    auto = glauber(model, init, 200, temperature=taus, seed=5, record_every=record_every)
    assert same_trajectory(plain, auto)
    assert model.forwards < 150  # sites were evaluated ahead
    assert glauber(exact.potts_chain(3), torch.zeros(2, 3, dtype=torch.long), 5).final.shape == (2, 3)  # no knee: plain


def test_adaptive_speculation_gives_the_plain_coupling_times():
    from glauber_mlm import coupling_times

    model = CheapRows(exact.incompatible_pairwise(6, 4, scale=1.0, seed=2))
    g = torch.Generator().manual_seed(0)
    x0, y0 = torch.randint(0, 4, (6, 6), generator=g), torch.randint(0, 4, (6, 6), generator=g)
    plain = coupling_times(model, x0, y0, 80, temperature=0.3, seed=1, speculate=1)
    auto = coupling_times(model, x0, y0, 80, temperature=0.3, seed=1)
    assert torch.equal(plain.times, auto.times) and torch.equal(plain.met, auto.met)


def test_speculation_knee_comes_from_the_shape_not_a_clock(tiny_bert):
    """The knee is a function of shape, length, device type and dtype: the same on every call and every load (a timed
    knee changed the batch widths between runs, and with them the float rounding of the draws)."""
    shape = shape_from_config(tiny_bert.model.config.to_dict(), tiny_bert.name)
    short, long = tiny_bert.speculation_knee(4), tiny_bert.speculation_knee(128)
    assert short == speculation_knee(shape, 4, "cpu", tiny_bert.dtype) and long <= short
    for knee in (short, long):
        assert knee == 0 or math.log2(knee).is_integer()
    assert [tiny_bert.speculation_knee(4) for _ in range(3)] == [short] * 3
    bert = Shape(768, 3072, 12, 30522, "bert-base")  # a GPU's fixed cost is worth far more rows than a CPU's
    assert speculation_knee(bert, 16, "cuda", torch.bfloat16) > speculation_knee(bert, 16, "cpu", torch.bfloat16)
    assert speculation_knee(bert, 16, "mps", torch.float32) == 0.0  # no nominal constants: no speculation


def test_packed_fp32_head_shares_the_weights_and_gives_the_numbers(tiny_bert):
    """On a CPU the fp32 forward uses the vocabulary projection pre-packed for oneDNN, every other weight shared."""
    from glauber_mlm.models.hf import PackedLinear

    fp32 = tiny_bert.weights_for(torch.float32)
    if fp32 is tiny_bert.model:
        pytest.skip("this CPU build has no oneDNN weight packing")
    assert isinstance(fp32.get_output_embeddings(), PackedLinear)
    assert isinstance(tiny_bert.model.get_output_embeddings(), torch.nn.Linear)  # the model itself is untouched
    assert fp32.bert.encoder.layer[0].attention.self.query.weight is tiny_bert.model.bert.encoder.layer[0].attention.self.query.weight
    support = torch.nonzero(tiny_bert.support).flatten()
    states = support[torch.randint(support.numel(), (8, 12), generator=torch.Generator().manual_seed(7))]
    sites = torch.arange(8)
    packed = tiny_bert.logits(states, sites)
    tiny_bert.pack_weights = False
    try:
        plain = tiny_bert.logits(states, sites)
    finally:
        tiny_bert.pack_weights = True
    assert torch.allclose(packed, plain, atol=1e-5, rtol=1e-5)


def test_cached_bf16_weights_equal_autocast(tiny_bert):
    """The cached bf16 Linear weights give bit-identical logits to autocast re-casting fp32 weights."""
    support = torch.nonzero(tiny_bert.support).flatten()
    states = support[torch.randint(support.numel(), (8, 12), generator=torch.Generator().manual_seed(4))]
    sites = torch.arange(8)
    cached = tiny_bert.logits(states, sites, dtype=torch.bfloat16)
    tiny_bert.cast_weights = False
    try:
        autocast = tiny_bert.logits(states, sites, dtype=torch.bfloat16)
    finally:
        tiny_bert.cast_weights = True
    assert torch.equal(cached, autocast)
    assert tiny_bert.model.cls.predictions.decoder.weight.dtype == torch.float32  # the fp32 model is untouched


def test_sdpa_equals_eager_attention(tmp_path):
    folder = save_tiny(tmp_path)
    sdpa = load_mlm(folder, device="cpu", dtype=torch.float32)
    eager = load_mlm(folder, device="cpu", dtype=torch.float32, attn_implementation="eager")
    assert sdpa.model.config._attn_implementation == "sdpa"
    assert eager.model.config._attn_implementation == "eager"
    support = torch.nonzero(sdpa.support).flatten()
    states = support[torch.randint(support.numel(), (8, 12), generator=torch.Generator().manual_seed(6))]
    sites = torch.arange(8)
    a, b = sdpa.logits(states, sites), eager.logits(states, sites)
    assert torch.allclose(a.softmax(-1), b.softmax(-1), atol=1e-6)


@pytest.mark.parametrize("family", ["bert", "roberta", "xlm-roberta", "camembert"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_lean_encoder_equals_the_library_forward_bit_for_bit(tmp_path, family, dtype):
    """`encoder.hidden_states` runs transformers' operations in its order: the logits are identical, not close."""
    folder = save_tiny(tmp_path, family, seed=3) if family in ("bert", "roberta") else save_family(tmp_path, family)
    mlm = load_mlm(folder, device="cpu", dtype=dtype)
    assert mlm.lean
    support = torch.nonzero(mlm.support).flatten()
    states = support[torch.randint(support.numel(), (7, 13), generator=torch.Generator().manual_seed(8))]
    sites = torch.arange(7) % 13
    lean = mlm.logits(states, sites)
    mlm.lean = False
    library = mlm.logits(states, sites)
    assert torch.equal(lean, library)
    assert lean[:, mlm.support].std() > 0.01  # a real forward, not a constant


def test_lean_encoder_declines_models_it_does_not_reproduce(tmp_path):
    """Eager attention (and every family besides BERT and the RoBERTa family) keeps transformers' own forward."""
    folder = save_tiny(tmp_path)
    assert not load_mlm(folder, device="cpu", dtype=torch.float32, attn_implementation="eager").lean
    assert load_mlm(folder, device="cpu", dtype=torch.float32).lean


@pytest.mark.parametrize("scan", ["random", "systematic"])
@pytest.mark.parametrize("k", [2, 5, 16])
def test_speculative_coupling_gives_the_plain_coupling_times(scan, k):
    """Coupled chains with k sites ahead meet at exactly the steps the plain runner finds."""
    from glauber_mlm import coupling_times

    model = exact.incompatible_pairwise(6, 4, scale=1.0, seed=2)
    g = torch.Generator().manual_seed(0)
    x0, y0 = torch.randint(0, 4, (40, 6), generator=g), torch.randint(0, 4, (40, 6), generator=g)
    for tau in (0.3, 1.0, 3.0):
        plain = coupling_times(model, x0, y0, 60, temperature=tau, seed=1, scan=scan, speculate=1)
        spec = coupling_times(model, x0, y0, 60, temperature=tau, seed=1, scan=scan, speculate=k)
        assert torch.equal(plain.times, spec.times) and torch.equal(plain.met, spec.met)
        assert spec.forward_rows >= plain.forward_rows  # discarded rows are counted


def test_packed_bf16_weights_equal_unpacked(tiny_bert):
    """oneDNN pre-packed bf16 Linear weights (CPU) give the numbers of plain bf16 weights."""
    from glauber_mlm.models.hf import PackedLinear

    support = torch.nonzero(tiny_bert.support).flatten()
    states = support[torch.randint(support.numel(), (8, 12), generator=torch.Generator().manual_seed(5))]
    sites = torch.arange(8)
    packed = tiny_bert.logits(states, sites, dtype=torch.bfloat16)
    if not any(isinstance(m, PackedLinear) for m in tiny_bert.weights_for(torch.bfloat16).modules()):
        pytest.skip("this CPU build has no oneDNN weight packing")
    tiny_bert.pack_weights = False
    try:
        plain = tiny_bert.logits(states, sites, dtype=torch.bfloat16)
    finally:
        tiny_bert.pack_weights = True
    assert torch.allclose(packed, plain, atol=1e-2, rtol=0)
