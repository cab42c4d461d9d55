"""The samplers give, bit for bit, what the hand-written loops before `kernels` gave (fixtures recorded from them).

Each case runs a public sampler (`glauber`, `coupling_times`, `metropolis`, `coupled_metropolis`,
`mh_coupling_times`) on an exact model, a tiny BERT or the embedded model, at a few seeds, with and without
speculation, and compares every field with `tests/fixtures/kernels/<case>.pt`, recorded at commit 3947fb8 by
`python tests/test_kernels.py` (rerun it only to record a deliberate change of the samplers' results). The resume
cases restart from a checkpoint that the old loops wrote mid-run (`<case>.ckpt`), so the checkpoint format stays too.

"Bit for bit" holds for the integers (states, sites, decisions, times, forward counts); floats were recorded on one
CPU, and another CPU's vector units sum in another order, so floats are compared to a tolerance stated from float32
(`FP32_RTOL`, `ACCEPT_RTOL`). On the exact models the integers must agree exactly. A neural forward's float32
logits differ in the last bits across CPUs, which moves every CDF boundary of a draw by up to ~1e-6: a draw whose
uniform falls that close to a boundary (a near-tie) may take the neighbouring token on another CPU, and from there the
chain follows another, equally valid path. On the MLM fixtures the replay therefore notes its near-ties (`near_ties`):
a chain may part from the recording only at one of them, everything before it is compared as above, and only what
follows goes uncompared (seen on an AMX Xeon: 1 chain of 4 in 7 of the 28 embedded-model cases, 8 with AVX2 kernels
forced by ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2; the Glauber one parts at a draw 2.5e-8 from a CDF
boundary).
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

import glauber_mlm.samplers.kernels as kernels
import glauber_mlm.samplers.metropolis as mh
from glauber_mlm import coupled_metropolis, coupling_times, exact, glauber, load_mlm, metropolis, mh_coupling_times
from glauber_mlm.rng import ACCEPT_STREAM, BRANCH_STREAM, TOKEN_STREAM, X_STREAM, Y_STREAM, uniforms
from glauber_mlm.samplers.kernels import coupled_init, coupled_step, glauber_init, glauber_step
from glauber_mlm.samplers.sampling import chain_seeds
from test_checkpoint import count_forwards

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "kernels"
EMBEDDED = HERE.parent / "data" / "models" / "minilm-mlm"
sys.path.insert(0, str(HERE))

# float32 arithmetic summed in another order (another CPU's vector width) moves a result by a few ulps (2⁻²³ ≈ 1.2e-7
# each); seen across CPUs: ≤ 1.1e-6 relative on energies and on the exact models' and tiny BERT's α
FP32_RTOL = 1e-5
# α = exp(−ΔE/τ − log-ratio): an absolute error δ of the PLL energies (n float32 log-probabilities each, |E| ~ 50)
# is a relative error δ/τ of α, up to ~4e-5 seen on the embedded model
ACCEPT_RTOL = 1e-3
# a near-tie: the draw's uniform lies within this much probability mass of a CDF boundary. A boundary c_k moves by
# Σ_{v≤k} p_v·δlog p_v ≤ c_k·max|δlog p| when the log-probabilities move by δlog p, ≲ 1.5e-6 across CPUs (the PLL
# energies, sums of 8 of them, differ by ≤ 1.2e-5); or α within ACCEPT_RTOL of the accept uniform
TIE = 2e-6


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


NEURAL_CHAINS = 4  # the chains (pairs) of every neural case


def neural_cases(model, name: str, n: int) -> dict:
    init = neural_init(model, NEURAL_CHAINS, n, 0)
    y0 = neural_init(model, NEURAL_CHAINS, n, 1)
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


TIMED = {"states", "sites", "changed", "accepted", "accept_prob", "energy"}  # fields with a leading record axis


def assert_same(case: str, got: dict, want: dict, ties: dict[int, set[int]] | None = None) -> None:
    """Every field of `want`: integers exactly, floats to the float32 tolerance. With `ties` (chain → the steps of its
    near-ties), a chain may part from the recording, but only at one of its near-ties: it agrees before the step where
    it parts, and that step (to the recording's granularity) is a near-tie. The run's forward count, which follows the
    paths, is then not compared."""
    if not ties:
        assert same_fields(got, want), case
        return
    for b in range(NEURAL_CHAINS):
        if not same_fields(got, want, b):
            step, spacing = parting_step(got, want, b)
            assert any(step - spacing < t <= step for t in ties.get(b, ())), (
                f"{case}: chain {b} parts from the recording at step {step} with no near-tie there "
                f"(near-ties at {sorted(ties.get(b, ()))})")


def parting_step(got: dict, want: dict, chain: int) -> tuple[int, int]:
    """(the last step before which `chain` agrees with the recording, the recording's step spacing there).

    For a result with no per-step record (coupling times), the step before the earlier of the two times."""
    timed = [k for k in want if k.rsplit(".", 1)[-1] in TIMED]
    if not timed:
        times = [int(r["times"][chain]) for r in (got, want) if "times" in r]
        return min(times) - 1, min(times)
    steps = next(v for k, v in want.items() if k.endswith("steps"))
    total = max(want[k].shape[0] for k in timed)
    last = max((t for t in range(total + 1) if same_fields(got, want, chain, t)), default=-1)
    return last, int(steps.diff().max()) if steps.numel() > 1 else 1


def same_fields(got: dict, want: dict, chain: int | None = None, before: int | None = None) -> bool:
    """Whether every field agrees (integers exactly, floats to `FP32_RTOL` / `ACCEPT_RTOL`): of every chain, or of
    `chain` alone (its states after at most `before` steps and its per-step fields of steps < `before`, if given)."""
    if got.keys() != want.keys():
        return False
    for key, value in want.items():
        field = key.rsplit(".", 1)[-1]
        if not isinstance(value, torch.Tensor):
            if chain is None and got[key] != value:
                return False
            continue
        if value.dtype != got[key].dtype or value.shape != got[key].shape:
            return False
        a, b = value, got[key]
        if chain is not None and field != "steps":
            axis = 1 if field in TIMED else 0
            a, b = a.select(axis, chain), b.select(axis, chain)
            if before is not None and field in TIMED:
                steps = want[key.replace(field, "steps")] if field == "states" else torch.arange(value.shape[0])
                keep = steps <= before if field in ("states", "energy") else steps < before
                a, b = a[keep], b[keep]
            elif before is not None:
                continue  # a final state or time: after every step
        if value.is_floating_point():
            rtol = ACCEPT_RTOL if field == "accept_prob" else FP32_RTOL
            if not torch.allclose(b, a, rtol=rtol, atol=0):
                return False
        elif not torch.equal(a, b):
            return False
    return True


@contextmanager
def near_ties(seeds: torch.Tensor, block: int):
    """The near-ties of a replay, as {chain: steps}: draws whose uniform lies within `TIE` of a CDF boundary
    (`sample_categorical`), meeting decisions of a maximal coupling within `TIE` of the overlap, and MH decisions
    within `ACCEPT_RTOL` of α. A uniform is traced to its chain and counter through the counter-based streams
    (counter = step, or step·block + m for block member m of an MH step)."""
    table = {float(u): (chain, counter) for stream in (TOKEN_STREAM, X_STREAM, Y_STREAM, BRANCH_STREAM, ACCEPT_STREAM)
             for counter in range(400) for chain, u in enumerate(uniforms(seeds, counter, stream).tolist())}
    ties: dict[int, set[int]] = {}

    def note(u: torch.Tensor, tied: torch.Tensor, per_block: bool) -> None:
        for value in u[tied].tolist():
            chain, counter = table[value]
            ties.setdefault(chain, set()).add(counter // block if per_block else counter)

    def sample(probs, u):
        cdf = probs.double().cumsum(-1)
        target = (u.double() * cdf[:, -1]).unsqueeze(-1)
        note(u, ((cdf - target).abs() / cdf[:, -1:]).amin(-1) < TIE, True)
        return real_sample(probs, u)

    def coupling(p, q, u=None, generator=None):
        w = torch.minimum(p / p.sum(-1, keepdim=True), q / q.sum(-1, keepdim=True)).sum(-1)
        note(u[:, 0], (u[:, 0] - w).abs() < TIE, True)
        return real_coupling(p, q, u, generator)

    def accept(x, z, e, log_ratio, tau, u, target):
        out = real_accept(x, z, e, log_ratio, tau, u, target)
        note(u, (u - out[3]).abs() <= ACCEPT_RTOL * out[3], False)
        return out

    real_sample, real_coupling, real_accept = kernels.sample_categorical, kernels.maximal_coupling, mh._accept
    kernels.sample_categorical = mh.sample_categorical = sample
    kernels.maximal_coupling = mh.maximal_coupling = coupling
    mh._accept = accept
    try:
        yield ties
    finally:
        kernels.sample_categorical = mh.sample_categorical = real_sample
        kernels.maximal_coupling = mh.maximal_coupling = real_coupling
        mh._accept = real_accept


def case_seeds(case: str, chains: int) -> tuple[torch.Tensor, int]:
    """The chain seeds of a neural case (its `-s<seed>-`) and its MH block (`-b<block>-`, 1 for Glauber)."""
    seed, block = re.search(r"-s(\d+)-", case), re.search(r"-b(\d+)-", case)
    return chain_seeds(int(seed[1]), chains), int(block[1]) if block else 1


def check(cases: dict, group: str, allow_ties: bool = False) -> dict[str, dict[int, set[int]]]:
    """Replay every case of `group` against its recording; `allow_ties`: chains may part after a near-tie (the
    neural fixtures). Returns the near-ties seen, {case: {chain: step}}."""
    want = torch.load(FIXTURES / f"{group}.pt", weights_only=True)
    assert want.keys() == cases.keys(), group
    seen = {}
    for case, run in cases.items():
        if not allow_ties:
            assert_same(case, as_dict(run()), want[case])
            continue
        with near_ties(*case_seeds(case, NEURAL_CHAINS)) as ties:
            got = as_dict(run())
        assert_same(case, got, want[case], ties)
        seen[case] = dict(ties)
    return seen


def test_exact_models_bit_for_bit():
    check(exact_cases(), "exact")


def test_tiny_bert_bit_for_bit(tmp_path):
    with one_thread():
        check(neural_cases(tiny(tmp_path), "tiny", 6), "tiny", allow_ties=True)


@pytest.mark.skipif(not EMBEDDED.exists(), reason="the embedded model is not checked out")
def test_embedded_model_bit_for_bit():
    with one_thread():
        check(neural_cases(embedded(), "embedded", 8), "embedded", allow_ties=True)


def test_a_chain_may_part_from_the_recording_only_at_a_near_tie():
    """A trajectory changed from step 5 on passes only where the replay saw a near-tie at step 5; a float off by
    more than float32 rounding fails."""
    want = torch.load(FIXTURES / "exact.pt", weights_only=True)["glauber-potts-s0-random-kNone-r1"]
    got = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in want.items()}
    got["states"][6:, 1] = (got["states"][6:, 1] + 1) % 3
    got["final"][1] = got["states"][-1, 1]
    assert_same("parted at a tie", got, want, {1: {5}})
    for ties in ({1: {2}}, {0: {5}}):
        with pytest.raises(AssertionError, match="chain 1 parts from the recording at step 5 with no near-tie"):
            assert_same("parted elsewhere", got, want, ties)
    mh = torch.load(FIXTURES / "exact.pt", weights_only=True)["mh-incompatible-s0-pll-b1-random"]
    off = dict(mh, accept_prob=mh["accept_prob"] * (1 + 3 * ACCEPT_RTOL))
    with pytest.raises(AssertionError):
        assert_same("α off", off, mh)


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
