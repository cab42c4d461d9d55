"""The named seed streams give the integers the notebooks wrote out by hand before (so every table stays as it was)."""
import pytest
import torch

from glauber_mlm.pages.run import Run
from glauber_mlm.rng import NAMED_STREAMS, stream


@pytest.mark.parametrize("seed", [0, 3, -2])
def test_streams_are_the_old_offsets(seed):
    for n in (4, 8, 64):
        assert stream(seed, "starts", n) == seed * 1_000_003 + n
        assert stream(seed, "pairs", n) == seed * 1_000_003 + 7_777_777 + n
        for s in range(3):
            assert stream(seed, "grid pairs", n, s) == seed * 1_000_003 + s * 1009 + n
    chains = stream(seed, "chains", torch.arange(5))
    assert chains.dtype == torch.int64 and chains.tolist() == [seed * 1_000_003 + k for k in range(5)]


def test_unknown_stream_and_bad_index_are_refused():
    with pytest.raises(ValueError, match="'pairs'"):
        stream(0, "pair", 8)
    with pytest.raises(TypeError, match="n must be an integer"):
        stream(0, "pairs", 8.0)
    assert set(NAMED_STREAMS) == {"starts", "chains", "grid pairs", "pairs", "tempering calibration", "tempering",
                                  "plain MH", "ising pairs", "planted ising pairs"}
    assert [stream(2, name) for name in ("tempering calibration", "tempering", "plain MH")] == [
        2 * 1_000_003 + 5_000_000, 2 * 1_000_003 + 6_000_000, 2 * 1_000_003 + 6_100_000]


def test_run_seed_for_uses_the_run_seed(tmp_path):
    run = Run("toy", "smoke", {"smoke": dict(seed=5)}, tmp_path)
    assert run.seed_for("pairs", n=16) == 5 * 1_000_003 + 7_777_777 + 16
    assert run.seed_for("grid pairs", n=8, s=2) == 5 * 1_000_003 + 2 * 1009 + 8
