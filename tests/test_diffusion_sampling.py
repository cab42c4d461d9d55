"""The Monte Carlo masked-diffusion samplers: their draws follow their exact twins' laws, they are reproducible from
their seeds, and they run on any Hugging Face masked LM through the multi-mask forward."""
import numpy as np
import pytest
import torch

from glauber_mlm import diffusion as d
from glauber_mlm import exact, load_mlm
from glauber_mlm.diffusion.fit import chi2_pvalue
from glauber_mlm.stats import chi2_size_power
from glauber_mlm.diffusion.partial_table import PartialTable
from glauber_mlm.exact.scan_order import tv
from tiny_models import save_tiny

pytestmark = pytest.mark.usefixtures("one_thread")

DRAWS = 3000


def incompatible_table(n=3, k=2, seed=4):
    g = torch.Generator().manual_seed(seed)
    return PartialTable(2.0 * torch.randn((k + 1) ** n, n, k, generator=g, dtype=torch.float64))


PLANS = {"mdlm": (lambda n: d.mdlm(3), 1.0), "remdm-cap": (lambda n: d.remdm(6, "cap", eta=0.3), 1.0),
         "remdm-rescale": (lambda n: d.remdm(6, "rescale", eta=0.5), 0.7),
         "remdm-loop": (lambda n: d.remdm(10, "loop", eta=0.1, t_on=0.6, t_off=0.2, alpha_on=0.6), 1.0),
         "llada-low": (lambda n: d.llada(n, n), 1.5), "llada-tempered": (lambda n: d.llada(n, n, "tempered"), 1.5),
         "llada-random": (lambda n: d.llada(n, 2, "random"), 1.0)}


@pytest.mark.parametrize("name", list(PLANS))
def test_draws_pass_chi2_against_their_exact_law_and_fail_against_another(name):
    """3 sites, 2 values, incompatible conditionals; the alternative is the left-to-right chain-rule law (or, for
    the sampler whose law it nearly is, the right-to-left one). Size and power of the rule at this design are measured
    on i.i.d. draws first: the rule can pass and can fail."""
    P = incompatible_table()
    make, tau = PLANS[name]
    plan = make(P.n)
    law = d.plan_law(P, plan, tau)
    wrong = max((d.chain_rule_law(P, o, tau) for o in ([0, 1, 2], [2, 1, 0])), key=lambda w: tv(w, law))
    assert tv(law, wrong) > 0.05
    size, power = chi2_size_power(law, wrong, DRAWS, reps=100)
    assert size <= 0.05 and power >= 0.95
    x = d.sample(P, P.n, plan, torch.arange(DRAWS) + 17, tau)
    assert chi2_pvalue(x, law, P.k) > 0.01
    assert chi2_pvalue(x, wrong, P.k) < 0.01


def test_a_chain_is_a_function_of_its_own_seed():
    P = incompatible_table()
    seeds = torch.arange(40) + 3
    plan = d.remdm(6, "cap", eta=0.3)
    x = d.sample(P, P.n, plan, seeds)
    assert torch.equal(x, d.sample(P, P.n, plan, seeds))
    assert torch.equal(x[7:9], d.sample(P, P.n, plan, seeds[7:9]))
    assert not torch.equal(x, d.sample(P, P.n, plan, seeds + 1000))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return load_mlm(save_tiny(tmp_path_factory.mktemp("bert"), "bert"), device="cpu", dtype=torch.float32)


def test_one_masked_site_gives_the_adapters_conditional(tiny):
    g = torch.Generator().manual_seed(0)
    ids = torch.nonzero(tiny.support).flatten()
    x = ids[torch.randint(ids.numel(), (6, 9), generator=g)]
    sites = torch.randint(9, (6,), generator=g)
    z = x.clone()
    z[torch.arange(6), sites] = d.MASK
    multi = tiny.masked_logits(z)[torch.arange(6), sites]
    single = tiny.logits(x, sites)
    assert torch.equal(torch.isfinite(multi), tiny.support.expand(6, -1))
    assert torch.allclose(multi[:, tiny.support], single[:, tiny.support], atol=1e-5)


def test_the_single_site_remask_kernel_is_the_real_models_glauber_kernel(tiny):
    """Remask one uniform site and unmask it at once: entry for entry the kernel of `exact.restricted`'s chain, built
    from the adapter's one-site forwards (the partial table comes from the multi-mask forwards)."""
    ids = torch.nonzero(tiny.support).flatten()
    context = ids[torch.arange(10) * 3 % ids.numel()]
    sites = torch.tensor([1, 4, 6])
    C = exact.candidate_sets(tiny, context, sites, 3)
    R = exact.restricted(tiny, context, sites, C)
    P = d.partial_table(d.RestrictedDenoiser(tiny, context, sites, C), 3, 3)
    for tau in (0.5, 2.0):
        glauber = exact.kernel(R, tau).toarray()
        assert np.abs(d.remask_kernel(P, 1, tau) - glauber).max() < 1e-5
        assert tv(d.glauber_law(P, tau), exact.stationary(exact.kernel(R, tau))) < 1e-5
        # two sites at once is another chain with another stationary law
        assert tv(exact.stationary(d.remask_kernel(P, 2, tau)), d.glauber_law(P, tau)) > 1e-6


def test_samplers_run_on_any_masked_lm(tiny):
    seeds = torch.arange(5)
    for plan in (d.mdlm(4), d.remdm(4, "loop"), d.llada(8, 4), d.llada(8, 8, "random")):
        x = d.sample(d.HFDenoiser(tiny), 8, plan, seeds, temperature=0.8)
        assert x.shape == (5, 8) and tiny.support[x].all()


def test_bad_input_is_refused(tiny):
    with pytest.raises(ValueError, match="partial states must be"):
        d.HFDenoiser(tiny).logits(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="special or unused"):
        d.HFDenoiser(tiny).logits(torch.full((1, 3), tiny.mask_id))
    with pytest.raises(ValueError, match="partial states hold ids outside"):
        d.JointDenoiser(*exact.compatible_pairwise(2, 2).joint()).logits(torch.tensor([[0, 5]]))
    with pytest.raises(ValueError, match="left masked sites"):
        d.sample(incompatible_table(), 3, d.llada(3, 3)[:2], torch.arange(2))
