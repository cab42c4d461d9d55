"""The samplers give, bit for bit, what the hand-written loops before `kernels` gave (fixtures recorded from them).

Each case runs a public sampler (`glauber`, `coupling_times`, `metropolis`, `coupled_metropolis`,
`mh_coupling_times`) on an exact model, a tiny BERT or the embedded model, at a few seeds, with and without
speculation, and compares every field with `tests/fixtures/kernels/<case>.pt`, recorded at commit 3947fb8 by
`python tests/test_kernels.py` (rerun it only to record a deliberate change of the samplers' results). The resume
cases restart from a checkpoint that the old loops wrote mid-run (`<case>.ckpt`), so the checkpoint format stays too.
"""
from __future__ import annotations

import re
import shutil
import sys
from contextlib import contextmanager
from dataclasses import fields, is_dataclass
from pathlib import Path

import pytest
import torch

from glauber_mlm import coupled_metropolis, coupling_times, exact, glauber, load_mlm, metropolis, mh_coupling_times
from glauber_mlm.samplers.kernels import coupled_init, coupled_step, glauber_init, glauber_step
from glauber_mlm.samplers.sampling import chain_seeds
from test_checkpoint import count_forwards

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "kernels"
EMBEDDED = HERE.parent / "data" / "models" / "minilm-mlm"
sys.path.insert(0, str(HERE))


@contextmanager
def one_thread():
    """One intra-op thread, so a neural forward rounds the same on every run (restored after)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def potts() -> exact.PairwiseModel:
    return exact.potts_chain(6, q=3, coupling=0.8, field=torch.tensor([0.3, 0.0, -0.2]))


def incompatible() -> exact.PairwiseModel:
    return exact.incompatible_pairwise(5, 4, scale=1.5, seed=3)


def tiny(tmp: Path):
    from tiny_models import save_tiny

    return load_mlm(save_tiny(tmp / "bert"), device="cpu", dtype=torch.float32)


def embedded():
    return load_mlm(EMBEDDED, device="cpu", dtype=torch.float32)


def neural_init(model, chains: int, n: int, seed: int) -> torch.Tensor:
    """`chains` × `n` ids drawn uniformly from the model's support (ordinary tokens only)."""
    support = torch.nonzero(model.support.cpu()).flatten()
    g = torch.Generator().manual_seed(seed)
    return support[torch.randint(0, support.numel(), (chains, n), generator=g)]


def glauber_cases(model, name: str, init: torch.Tensor, steps: int, seeds, speculates) -> dict:
    B = init.shape[0]
    taus = torch.linspace(0.6, 1.4, B)
    out = {}
    for seed in seeds:
        for scan in ("random", "systematic"):
            for spec in speculates:
                for every in (1, 3):
                    out[f"glauber-{name}-s{seed}-{scan}-k{spec}-r{every}"] = lambda s=seed, c=scan, k=spec, e=every: (
                        glauber(model, init, steps, temperature=taus, seed=s, scan=c, record_every=e, speculate=k))
    return out


def coupling_cases(model, name: str, x0, y0, budget: int, seeds, speculates, tau=1.2) -> dict:
    out = {}
    for seed in seeds:
        for scan in ("random", "systematic"):
            for spec in speculates:
                out[f"coupling-{name}-s{seed}-{scan}-k{spec}"] = lambda s=seed, c=scan, k=spec: (
                    coupling_times(model, x0, y0, budget, temperature=tau, seed=s, scan=c, speculate=k))
    return out


def mh_cases(model, name: str, init, y0, steps: int, seeds, energies, blocks) -> dict:
    B = init.shape[0]
    taus = torch.linspace(0.7, 1.3, B)
    out = {}
    for seed in seeds:
        for energy in energies:
            for block in blocks:
                for scan in ("random", "systematic"):
                    tag = f"{name}-s{seed}-{energy}-b{block}-{scan}"
                    out[f"mh-{tag}"] = lambda s=seed, e=energy, b=block, c=scan: metropolis(
                        model, init, steps, temperature=taus, seed=s, energy=e, scan=c, record_every=2, block=b)
                    out[f"coupledmh-{tag}"] = lambda s=seed, e=energy, b=block, c=scan: coupled_metropolis(
                        model, init, y0, steps, temperature=taus, seed=s, energy=e, scan=c, record_every=3, block=b)
                    out[f"mhtimes-{tag}"] = lambda s=seed, e=energy, b=block, c=scan: mh_coupling_times(
                        model, init, y0, 4 * steps, temperature=taus, seed=s, energy=e, scan=c, block=b)
    return out


def exact_cases() -> dict:
    p, m = potts(), incompatible()
    z6 = torch.zeros(5, 6, dtype=torch.long)
    x0, y0 = torch.zeros(6, 5, dtype=torch.long), torch.full((6, 5), 3, dtype=torch.long)
    y0[0] = 0  # one pair met at the start
    return {**glauber_cases(p, "potts", z6, 40, (0, 11), (None, 1, 4)),
            **glauber_cases(m, "incompatible", x0, 30, (5,), (1, 3)),
            **coupling_cases(p, "potts", z6, torch.full_like(z6, 2), 400, (0, 7), (None, 1, 4)),
            **coupling_cases(m, "incompatible", x0, y0, 400, (2,), (1, 5), tau=0.9),
            **mh_cases(m, "incompatible", x0, y0, 25, (0, 4), ("pll", "joint"), (1, 2))}


def neural_cases(model, name: str, n: int) -> dict:
    init = neural_init(model, 4, n, 0)
    y0 = neural_init(model, 4, n, 1)
    y0[:, : n - 2] = init[:, : n - 2]  # pairs that differ at two sites, so some meet
    return {**glauber_cases(model, name, init, 12, (0,), (None, 1, 3)),
            **coupling_cases(model, name, init, y0, 30, (1,), (None, 1), tau=0.5),
            **mh_cases(model, name, init, y0, 6, (2,), ("pll",), (1, 2))}


def resume_cases(model) -> dict:
    """Runs of `model` (the 6-site Potts chain) with a checkpoint at `path`: case -> run(path)."""
    init, taus = torch.zeros(4, 6, dtype=torch.long), torch.tensor([1.0, 0.7, 1.3, 0.9])
    runs = {f"resume-glauber-k{k}": lambda path, k=k: glauber(
        model, init, 120, temperature=taus, seed=3, record_every=7, speculate=k, checkpoint=path, checkpoint_every=20)
        for k in (1, 4)}
    return runs | {f"resume-coupling-k{k}": lambda path, k=k: coupling_times(
        model, init, torch.full_like(init, 2), 3000, temperature=0.4, seed=5, speculate=k, checkpoint=path,
        checkpoint_every=10) for k in (1, 4)}


INTERRUPT_AFTER = {"resume-glauber-k1": 50, "resume-glauber-k4": 15, "resume-coupling-k1": 60,
                   "resume-coupling-k4": 25}  # forwards before the recorded run was killed


def as_dict(result) -> dict:
    """A result's fields (tensors and ints), or a tuple's items by index, flattened to one dict."""
    if isinstance(result, tuple):
        return {f"{i}.{k}": v for i, r in enumerate(result) for k, v in as_dict(r).items()}
    assert is_dataclass(result)
    return {f.name: getattr(result, f.name) for f in fields(result)}


def assert_same(case: str, got: dict, want: dict) -> None:
    assert got.keys() == want.keys(), case
    for key, value in want.items():
        if isinstance(value, torch.Tensor):
            assert value.dtype == got[key].dtype and torch.equal(value, got[key]), f"{case}: {key}"
        else:
            assert got[key] == value, f"{case}: {key}"


def check(cases: dict, group: str) -> None:
    want = torch.load(FIXTURES / f"{group}.pt", weights_only=True)
    assert want.keys() == cases.keys(), group
    for case, run in cases.items():
        assert_same(case, as_dict(run()), want[case])


def test_exact_models_bit_for_bit():
    check(exact_cases(), "exact")


def test_tiny_bert_bit_for_bit(tmp_path):
    with one_thread():
        check(neural_cases(tiny(tmp_path), "tiny", 6), "tiny")


@pytest.mark.skipif(not EMBEDDED.exists(), reason="the embedded model is not checked out")
def test_embedded_model_bit_for_bit():
    with one_thread():
        check(neural_cases(embedded(), "embedded", 8), "embedded")


@pytest.mark.filterwarnings("error")  # a matching checkpoint is resumed without any warning
@pytest.mark.parametrize("case", sorted(INTERRUPT_AFTER))
def test_resume_from_an_old_checkpoint(tmp_path, case):
    """A checkpoint the old loops wrote mid-run resumes to the old uninterrupted result and ends at its last step."""
    want = torch.load(FIXTURES / "resume.pt", weights_only=True)[case]
    path = tmp_path / "run.ckpt"
    shutil.copy(FIXTURES / f"{case}.ckpt", path)
    calls = count_forwards(model := potts())
    assert_same(case, as_dict(resume_cases(model)[case](path)), want["result"])
    assert calls[0] == want["forwards_after_resume"]
    assert torch.load(path, weights_only=True)["step"] == want["final_step"]


def test_a_loop_over_the_kernels_is_glauber_and_coupling_times():
    """A user's loop over `glauber_step` / `coupled_step` at fixed temperatures follows `glauber` / `coupling_times`."""
    model, x0, taus = potts(), torch.zeros(5, 6, dtype=torch.long), torch.linspace(0.6, 1.4, 5)
    seeds = chain_seeds(11, 5)
    state = glauber_init(x0)
    for _ in range(40):
        state, _ = glauber_step(model, state, seeds, taus)
    assert torch.equal(state.x, glauber(model, x0, 40, temperature=taus, seed=11).final)
    pair = coupled_init(x0, torch.full_like(x0, 2))
    times = torch.zeros(5, dtype=torch.int64)
    while pair.active.numel():
        pair, info = coupled_step(model, pair, seeds, 1.2)
        times[info.pairs[info.met]] = pair.done[info.pairs[info.met]]
    assert torch.equal(times, coupling_times(model, x0, torch.full_like(x0, 2), 10_000, 1.2, seed=11).times)


def test_the_readme_annealing_loop_runs():
    """The README's own loop (an annealing schedule over `glauber_step`) runs as printed after the lines of the
    library example before it that make its model."""
    blocks = re.findall(r"```python\n(.*?)```", (HERE.parent / "README.md").read_text(), re.S)
    model = next(b for b in blocks if "potts_chain(16" in b).split("\ntraj =")[0]
    loop = next(b for b in blocks if "glauber_step" in b)
    namespace: dict = {}
    exec(model + "\n" + loop, namespace)
    assert namespace["state"].x.shape == (8, 16) and bool((namespace["state"].done == 500).all())


def record() -> None:
    """Write the fixtures from the samplers as they are now (run before a change that must keep them)."""
    import tempfile

    FIXTURES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        with one_thread():
            groups = {"exact": exact_cases, "tiny": lambda: neural_cases(tiny(tmp), "tiny", 6),
                      "embedded": lambda: neural_cases(embedded(), "embedded", 8)}
            for group, make in groups.items():
                torch.save({case: as_dict(run()) for case, run in make().items()}, FIXTURES / f"{group}.pt")
        resumed = {}
        for case, stop in INTERRUPT_AFTER.items():
            result = as_dict(resume_cases(potts())[case](None))
            path = tmp / f"{case}.ckpt"
            count_forwards(model := potts(), stop)
            with pytest.raises(KeyboardInterrupt):
                resume_cases(model)[case](path)
            assert torch.load(path, weights_only=True)["step"] > 0, case
            shutil.copy(path, FIXTURES / f"{case}.ckpt")
            calls = count_forwards(model := potts())
            assert_same(case, as_dict(resume_cases(model)[case](path)), result)
            resumed[case] = {"result": result, "forwards_after_resume": calls[0],
                             "final_step": torch.load(path, weights_only=True)["step"]}
        torch.save(resumed, FIXTURES / "resume.pt")


if __name__ == "__main__":
    record()
