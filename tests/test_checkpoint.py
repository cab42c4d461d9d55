"""Checkpoints: an interrupted run resumes to the trajectory an uninterrupted run gives, field by field."""
import os
import signal
import subprocess
import sys
import time
from dataclasses import fields
from pathlib import Path

import pytest
import torch

from glauber_mlm import coupling_times, exact, glauber
from glauber_mlm.samplers import checkpoint

SRC = Path(__file__).resolve().parents[1] / "src"
N_SITES, CHAINS = 10, 4


def potts() -> exact.PairwiseModel:
    return exact.potts_chain(N_SITES, q=3, coupling=0.8, field=torch.tensor([0.3, 0.0, -0.2]))


def count_forwards(model, stop_after: int | None = None) -> list[int]:
    """Patch `model.logits` to count its calls (the returned list); it raises KeyboardInterrupt after `stop_after`."""
    calls, inner = [0], type(model).logits.__get__(model)

    def logits(states, sites, dtype=None):
        calls[0] += 1
        if stop_after is not None and calls[0] > stop_after:
            raise KeyboardInterrupt
        return inner(states, sites, dtype)

    model.logits = logits
    return calls


def assert_same(a, b) -> None:
    """Every field of two Trajectory / CouplingResult objects is equal (torch.equal for tensors)."""
    for f in fields(a):
        va, vb = getattr(a, f.name), getattr(b, f.name)
        assert torch.equal(va, vb) if isinstance(va, torch.Tensor) else va == vb, f.name


def run_glauber(model, path=None, seed=0, steps=300, speculate=1):
    init = torch.zeros(CHAINS, N_SITES, dtype=torch.long)
    return glauber(model, init, steps, temperature=torch.tensor([1.0, 0.7, 1.3, 0.9]), seed=seed, record_every=7,
                   speculate=speculate, checkpoint=path, checkpoint_every=20)


def run_coupling(model, path=None, seed=0, steps=3000, speculate=1):
    x0 = torch.zeros(CHAINS, N_SITES, dtype=torch.long)
    return coupling_times(model, x0, torch.full_like(x0, 2), steps, temperature=1.3, seed=seed, speculate=speculate,
                          checkpoint=path, checkpoint_every=10)


RUNS = {"glauber": run_glauber, "coupling": run_coupling}


@pytest.mark.filterwarnings("error")  # a matching checkpoint is resumed without any warning
@pytest.mark.parametrize("speculate", [1, 4])
@pytest.mark.parametrize("kind", ["glauber", "coupling"])
def test_interrupted_run_resumes_exactly(tmp_path, kind, speculate):
    run, path = RUNS[kind], tmp_path / "run.pt"
    ref_model = potts()
    ref_calls = count_forwards(ref_model)
    ref = run(ref_model, speculate=speculate)
    stopping = potts()
    count_forwards(stopping, stop_after=ref_calls[0] // 2)
    with pytest.raises(KeyboardInterrupt):
        run(stopping, path, speculate=speculate)
    assert 0 < torch.load(path, weights_only=True)["step"]
    resumed_model = potts()
    resumed_calls = count_forwards(resumed_model)
    assert_same(run(resumed_model, path, speculate=speculate), ref)
    assert 0 < resumed_calls[0] < ref_calls[0]  # it continued from the checkpoint, not from step 0
    again_model = potts()
    again_calls = count_forwards(again_model)
    assert_same(run(again_model, path, speculate=speculate), ref)
    assert again_calls[0] == 0  # a finished run's checkpoint stays: the rerun returns at once
    assert os.listdir(tmp_path) == ["run.pt"]  # no temporary file left behind


@pytest.mark.parametrize("change", [{"seed": 1}, {"steps": 200}])
@pytest.mark.parametrize("kind", ["glauber", "coupling"])
def test_checkpoint_of_other_inputs_is_set_aside(tmp_path, kind, change):
    run, path = RUNS[kind], tmp_path / "run.pt"
    run(potts(), path)
    written = path.read_bytes()
    with pytest.warns(UserWarning, match=r"run\.pt was written by other inputs"):
        out = run(potts(), path, **change)
    assert_same(out, run(potts(), **change))
    assert (tmp_path / "run.pt.other-inputs").read_bytes() == written  # set aside, never deleted
    assert torch.load(path, weights_only=True)["fingerprint"] != torch.load(
        tmp_path / "run.pt.other-inputs", weights_only=True)["fingerprint"]


@pytest.mark.parametrize("speculate", [1, 4])
@pytest.mark.parametrize("kind", ["glauber", "coupling"])
def test_truncated_checkpoint_is_set_aside_and_the_run_starts_afresh(tmp_path, kind, speculate):
    run, path = RUNS[kind], tmp_path / "run.pt"
    ref = run(potts(), path, speculate=speculate)
    truncated = path.read_bytes()[: path.stat().st_size // 2]
    path.write_bytes(truncated)
    model = potts()
    calls = count_forwards(model)
    with pytest.warns(UserWarning, match=r"run\.pt is unreadable/truncated"):
        assert_same(run(model, path, speculate=speculate), ref)
    assert calls[0] > 0  # started afresh
    assert (tmp_path / "run.pt.corrupt").read_bytes() == truncated
    path.write_bytes(b"not a checkpoint")  # a second corrupt file does not overwrite the first
    with pytest.warns(UserWarning, match="unreadable"):
        assert_same(run(potts(), path, speculate=speculate), ref)
    assert (tmp_path / "run.pt.corrupt.1").read_bytes() == b"not a checkpoint"


def test_fingerprint_separates_inputs():
    x = torch.zeros(2, 4, dtype=torch.long)
    base = dict(model=exact.potts_chain(4, q=2), init=x, steps=10, seed=torch.tensor([0, 1]), dtype=None)
    fp = checkpoint.fingerprint(**base)
    assert checkpoint.fingerprint(**dict(base, model=exact.potts_chain(4, q=2))) == fp
    for change in (dict(model=exact.potts_chain(4, q=2, coupling=0.9)), dict(init=x + 1), dict(steps=11),
                   dict(seed=torch.tensor([0, 2])), dict(dtype=torch.bfloat16), dict(scan="systematic")):
        assert checkpoint.fingerprint(**dict(base, **change)) != fp, change


# with a third argument "hold", the run stops for good at its first forward after its first checkpoint, so that the
# test's SIGKILL lands mid-run however loaded the machine is
SCRIPT = """
import os, sys, threading
import torch
from glauber_mlm import exact, glauber

hold = sys.argv[3] == "hold"
model = exact.potts_chain({n}, q=3, coupling=0.8, field=torch.tensor([0.3, 0.0, -0.2]))
inner, calls = model.logits, [0]
def logits(states, sites, dtype=None):
    if hold and os.path.exists(sys.argv[1]):
        threading.Event().wait()
    calls[0] += 1
    return inner(states, sites, dtype)
model.logits = logits
traj = glauber(model, torch.zeros({b}, {n}, dtype=torch.long), {steps}, seed=5, record_every=10,
               checkpoint=sys.argv[1], checkpoint_every=50)
torch.save({{"traj": vars(traj), "calls": calls[0]}}, sys.argv[2])
"""


def test_killed_process_resumes_exactly(tmp_path):
    """SIGKILL a run once its first checkpoint exists; rerunning the script gives the uninterrupted trajectory."""
    steps = 600
    script, ckpt, out = tmp_path / "run.py", tmp_path / "run.pt", tmp_path / "out.pt"
    script.write_text(SCRIPT.format(n=N_SITES, b=CHAINS, steps=steps))
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, str(script), str(ckpt), str(out), "hold"], env=env)
    while not ckpt.exists():
        assert proc.poll() is None, "the run ended before its first checkpoint"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert ckpt.exists() and not out.exists(), "the run was to be killed after its first checkpoint, before its end"
    assert 0 < torch.load(ckpt, weights_only=True)["step"] < steps
    subprocess.run([sys.executable, str(script), str(ckpt), str(out), "go"], env=env, check=True)
    saved = torch.load(out, weights_only=True)
    ref = glauber(potts(), torch.zeros(CHAINS, N_SITES, dtype=torch.long), steps, seed=5, record_every=10)
    assert 0 < saved["calls"] < steps
    for name, value in vars(ref).items():
        assert torch.equal(saved["traj"][name], value), name


def test_tiny_bert_speculative_run_resumes_exactly(tmp_path):
    """On a neural model too: the resumed batches are the ones the uninterrupted run forwards, so the path is equal."""
    from tiny_models import save_tiny

    from glauber_mlm import load_mlm

    folder = save_tiny(tmp_path / "bert")
    mlm = load_mlm(folder, device="cpu", dtype=torch.float32)
    init, _ = mlm.encode(["the cat sat on the mat and ran", "a big red dog ran fast or slow"], 8)
    args = dict(steps=40, temperature=0.5, seed=3, record_every=3, speculate=4, checkpoint_every=5)
    ref_calls = count_forwards(mlm)
    ref = glauber(mlm, init, **args)
    count_forwards(mlm, stop_after=6)
    with pytest.raises(KeyboardInterrupt):
        glauber(mlm, init, checkpoint=tmp_path / "bert.pt", **args)
    calls = count_forwards(mlm)
    assert_same(glauber(mlm, init, checkpoint=tmp_path / "bert.pt", **args), ref)
    assert 0 < calls[0] < ref_calls[0]
