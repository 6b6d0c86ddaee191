"""Tests for minformer.word2vec: vocabulary, noise, subsampling, windows, the loss, training, queries."""

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import minformer.word2vec as w2v
from minformer.word2vec import (
    CBOW,
    SkipGram,
    Vocab,
    analogy,
    build_vocab,
    cbow_examples,
    cosine_similarity,
    keep_probabilities,
    most_similar,
    negative_sampling_loss,
    noise_distribution,
    sample_noise,
    skipgram_pairs,
    subsample,
    train_word2vec,
    unigram_table,
)


def two_topic_corpus(n_sentences=600, seed=0):
    """Sentences of 8 words drawn from one of two disjoint groups: 'a0'…'a9' or 'b0'…'b9'."""
    rng = np.random.default_rng(seed)
    groups = [[f"a{i}" for i in range(10)], [f"b{i}" for i in range(10)]]
    return [list(rng.choice(groups[rng.integers(2)], size=8)) for _ in range(n_sentences)]


# ---------------------------------------------------------------------------- vocabulary
def test_build_vocab_counts_order_and_min_count():
    tokens = ["the", "cat", "sat", "on", "the", "mat", "the", "cat", "ran"]
    v = build_vocab(tokens, min_count=2)
    assert v.itos == ["the", "cat"] and v.counts.tolist() == [3, 2]
    assert v.index("cat") == 1 and "mat" not in v and len(v) == 2
    assert v.encode(["cat", "mat", "the"], unknown=-1).tolist() == [1, -1, 0]
    assert v.encode(["cat", "mat", "the"], unknown="drop").tolist() == [1, 0]
    with pytest.raises(ValueError, match=r"1 of 3 words.*\['mat'\].*unknown='drop'"):
        v.encode(["cat", "mat", "the"])
    with pytest.raises(TypeError, match="not a single str"):
        v.encode("cat")
    v1 = build_vocab(tokens, min_count=1)
    assert v1.itos[:2] == ["the", "cat"]
    assert v1.itos[2:] == sorted(v1.itos[2:]), "ties are broken alphabetically"
    assert build_vocab(tokens, min_count=1, max_size=3).itos == ["the", "cat", "mat"]
    # sentences are counted the same way
    assert build_vocab([tokens[:4], tokens[4:]], min_count=2).itos == ["the", "cat"]


def test_vocab_bad_input():
    with pytest.raises(ValueError, match="min_count=5"):
        build_vocab(["a", "b", "c"], min_count=5)
    with pytest.raises(ValueError, match="min_count must be"):
        build_vocab(["a"], min_count=0)
    with pytest.raises(TypeError, match="list of words"):
        build_vocab("a b c")
    with pytest.raises(ValueError, match="empty"):
        build_vocab([])
    with pytest.raises(TypeError, match="mixes"):
        build_vocab([["a", "b"], "c"])
    with pytest.raises(ValueError, match="'dog' is not in the vocabulary"):
        build_vocab(["a", "a"], min_count=1).index("dog")
    with pytest.raises(ValueError, match="3 words but counts has 2"):
        Vocab(["a", "b", "c"], [1, 2])


# ---------------------------------------------------------------------------- noise, subsampling
def test_noise_distribution_is_count_to_the_three_quarters():
    counts = np.array([1000, 100, 10, 1])
    p = noise_distribution(counts)
    assert p.dtype == torch.float64 and abs(float(p.sum()) - 1) < 1e-12
    ratios = (p[0] / p[1:]).numpy()
    np.testing.assert_allclose(ratios, (1000 / counts[1:]) ** 0.75, rtol=1e-12)
    # flatter than the unigram distribution: the rare word gains probability
    assert p[3] > counts[3] / counts.sum()
    np.testing.assert_allclose(noise_distribution(counts, power=1.0), counts / counts.sum())
    with pytest.raises(ValueError, match="counts"):
        noise_distribution(np.zeros(3))


def test_unigram_table_samples_the_noise_distribution():
    p = noise_distribution(np.array([5000, 800, 90, 7, 1]))
    table = unigram_table(p, size=1_000_000)
    assert abs(len(table) - 1_000_000) < 10
    draws = sample_noise(table, (200_000,), torch.Generator().manual_seed(0))
    freq = torch.bincount(draws, minlength=5).double() / len(draws)
    torch.testing.assert_close(freq, p, atol=3e-3, rtol=0.05)
    assert draws.dtype == torch.int64
    with pytest.raises(ValueError, match="size"):
        unigram_table(p, size=3)


def test_subsampling_keeps_rare_words_and_thins_frequent_ones():
    counts = np.array([9000, 900, 90, 10])  # frequencies 0.9, 0.09, 0.009, 0.001
    keep = keep_probabilities(counts, t=1e-3)
    np.testing.assert_allclose(keep, np.minimum(1, np.sqrt(1e-3 / (counts / 10000))))
    assert keep[3] == 1.0 and keep[0] < 0.04
    ids = np.repeat(np.arange(4), counts)
    a, _ = subsample(ids, keep, np.random.default_rng(0))
    b, _ = subsample(ids, keep, np.random.default_rng(0))
    np.testing.assert_array_equal(a, b)  # seeded
    kept = np.bincount(a, minlength=4) / counts
    np.testing.assert_allclose(kept, keep, atol=0.05)
    with pytest.raises(ValueError, match=r"t must lie in \(0, inf\); got 0"):
        keep_probabilities(counts, t=0)


# ---------------------------------------------------------------------------- windows
def test_skipgram_pairs_exact():
    c, x = skipgram_pairs(np.array([10, 11, 12, 13]), window=2)
    pairs = list(zip(c.tolist(), x.tolist()))
    assert pairs == [
        (12, 10), (13, 11),  # offset −2
        (11, 10), (12, 11), (13, 12),  # offset −1
        (10, 11), (11, 12), (12, 13),  # offset +1
        (10, 12), (11, 13),  # offset +2
    ]  # fmt: skip
    # windows do not cross sentence boundaries
    c, x = skipgram_pairs(np.array([10, 11, 12, 13]), window=2, segments=np.array([0, 0, 1, 1]))
    assert sorted(zip(c.tolist(), x.tolist())) == [(10, 11), (11, 10), (12, 13), (13, 12)]
    assert skipgram_pairs(np.array([5]), window=3)[0].size == 0


def test_skipgram_pairs_dynamic_matches_a_loop():
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 50, size=40)
    segments = np.repeat([0, 1, 2], [15, 5, 20])
    c, x = skipgram_pairs(ids, 4, segments, dynamic=True, rng=np.random.default_rng(7))
    radius = np.random.default_rng(7).integers(1, 5, size=40)  # the same draw
    expected = [
        (ids[i], ids[i + o])
        for o in [-4, -3, -2, -1, 1, 2, 3, 4]
        for i in range(40)
        if 0 <= i + o < 40 and segments[i] == segments[i + o] and abs(o) <= radius[i]
    ]
    assert list(zip(c.tolist(), x.tolist())) == [(int(a), int(b)) for a, b in expected]
    with pytest.raises(ValueError, match="rng"):
        skipgram_pairs(ids, 2, dynamic=True)
    with pytest.raises(ValueError, match="window must be"):
        skipgram_pairs(ids, 0)
    with pytest.raises(ValueError, match=r"1-D.*\(2, 20\)"):
        skipgram_pairs(ids.reshape(2, 20), 2)


def test_cbow_examples_exact():
    PAD = 99
    ctx, centers = cbow_examples(np.array([10, 11, 12]), window=2, pad_id=PAD)
    assert centers.tolist() == [10, 11, 12]
    assert ctx.tolist() == [[PAD, PAD, 11, 12], [PAD, 10, 12, PAD], [10, 11, PAD, PAD]]
    # a one-word sentence has no context and is dropped
    ctx, centers = cbow_examples(
        np.array([10, 11, 12]), window=1, pad_id=PAD, segments=np.array([0, 0, 1])
    )
    assert centers.tolist() == [10, 11] and ctx.tolist() == [[PAD, 11], [10, PAD]]


# ---------------------------------------------------------------------------- the loss
def test_negative_sampling_loss_value_and_gradients():
    torch.manual_seed(0)
    v = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    u_pos = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    u_neg = torch.randn(3, 2, 4, dtype=torch.float64, requires_grad=True)
    loss = negative_sampling_loss(v, u_pos, u_neg)
    expected = np.mean(
        [
            -np.log(1 / (1 + np.exp(-(u_pos[b] @ v[b]).item())))
            - sum(np.log(1 / (1 + np.exp((u_neg[b, i] @ v[b]).item()))) for i in range(2))
            for b in range(3)
        ]
    )
    assert abs(loss.item() - expected) < 1e-12
    assert torch.autograd.gradcheck(negative_sampling_loss, (v, u_pos, u_neg))
    # hand-derived: ∂L/∂v = [(σ(u_oᵀv) − 1) u_o + Σ σ(u_nᵀv) u_n] / batch, ∂L/∂u_o = (σ − 1) v / batch
    loss.backward()
    s_pos = (u_pos * v).sum(-1, keepdim=True)  # (3, 1)
    s_neg = torch.einsum("bkd,bd->bk", u_neg, v).unsqueeze(-1)  # (3, 2, 1)
    gv = ((torch.sigmoid(s_pos) - 1) * u_pos + (torch.sigmoid(s_neg) * u_neg).sum(1)) / 3
    torch.testing.assert_close(v.grad, gv.detach())
    torch.testing.assert_close(u_pos.grad, ((torch.sigmoid(s_pos) - 1) * v / 3).detach())
    torch.testing.assert_close(u_neg.grad, (torch.sigmoid(s_neg) * v.unsqueeze(1) / 3).detach())


def test_negative_sampling_loss_bad_shapes():
    with pytest.raises(ValueError, match=r"u_pos \(3, 5\)"):
        negative_sampling_loss(torch.randn(3, 4), torch.randn(3, 5), torch.randn(3, 2, 4))
    with pytest.raises(ValueError, match=r"u_neg \(2, 2, 4\)"):
        negative_sampling_loss(torch.randn(3, 4), torch.randn(3, 4), torch.randn(2, 2, 4))
    with pytest.raises(ValueError, match="dim 5"):
        negative_sampling_loss(torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 2, 5))


def test_models_compute_the_loss_of_their_vectors():
    torch.manual_seed(0)
    sg = SkipGram(12, 6, seed=0)
    torch.nn.init.normal_(sg.out_embed.weight)  # word2vec starts outputs at 0: make them nonzero
    c, x, n = torch.tensor([1, 2]), torch.tensor([3, 4]), torch.tensor([[5, 6, 7], [8, 9, 10]])
    E_in, E_out = sg.in_embed.weight, sg.out_embed.weight
    torch.testing.assert_close(sg(c, x, n), negative_sampling_loss(E_in[c], E_out[x], E_out[n]))
    assert sg.vectors().shape == (12, 6) and sg.vectors("both").shape == (12, 6)

    cb = CBOW(12, 6, seed=0)
    torch.nn.init.normal_(cb.out_embed.weight)
    P = cb.pad_id
    ctx = torch.tensor([[P, 1, 2, P], [3, 4, 5, 6]])
    h = torch.stack([cb.in_embed.weight[[1, 2]].mean(0), cb.in_embed.weight[[3, 4, 5, 6]].mean(0)])
    E_out = cb.out_embed.weight
    torch.testing.assert_close(cb(ctx, x, n), negative_sampling_loss(h, E_out[x], E_out[n]))
    assert cb.vectors().shape == (12, 6)  # the padding row is not a word
    loss = cb(ctx, x, n)
    loss.backward()
    assert (cb.in_embed.weight.grad[P] == 0).all()
    with pytest.raises(ValueError, match=r"\(2,\), \(3,\)"):
        sg(c, torch.tensor([1, 2, 3]), n)
    with pytest.raises(ValueError, match=r"\(2, 4\), \(3,\)"):
        cb(ctx, torch.tensor([1, 2, 3]), n)
    with pytest.raises(ValueError, match="which"):
        sg.vectors("hidden")


# ---------------------------------------------------------------------------- training
@pytest.mark.parametrize("model", ["skipgram", "cbow"])
def test_training_lowers_the_loss_and_is_seeded(model):
    corpus = two_topic_corpus(300)
    batch = 256 if model == "skipgram" else 64  # CBOW has one example per word, not per pair
    kw = {"model": model, "dim": 16, "window": 3, "epochs": 2, "batch_size": batch}
    kw |= {"min_count": 1, "progress": False}
    kw["subsample_t"] = None  # 20 words of frequency 5%: t = 1e-4 would drop ~95% of them
    losses = train_word2vec(corpus, seed=3, **kw).losses
    k = 5
    assert np.mean(losses[:3]) > 1.2 * np.mean(losses[-3:]), "the loss should fall"
    assert abs(losses[0] - (k + 1) * np.log(2)) < 0.05, "zero output vectors: loss = (k+1)·ln 2"
    assert train_word2vec(corpus, seed=3, **kw).losses == losses
    assert train_word2vec(corpus, seed=4, **kw).losses != losses


@pytest.mark.parametrize("model", ["skipgram", "cbow"])
def test_planted_groups_cluster(model):
    res = train_word2vec(
        two_topic_corpus(),
        model=model,
        dim=16,
        window=3,
        epochs=5,
        batch_size=512,
        min_count=1,
        subsample_t=None,
        progress=False,
    )
    E, vocab = res.model.vectors(), res.vocab
    a = [vocab.index(f"a{i}") for i in range(10)]
    b = [vocab.index(f"b{i}") for i in range(10)]
    # raw vectors share a common direction (CBOW's more so); centering removes it
    for vectors, margin in ((E, 0.2), (E - E.mean(dim=0), 1.0)):
        S = cosine_similarity(vectors, vectors)
        within = (S[a][:, a].sum() - 10 + S[b][:, b].sum() - 10) / 180  # off-diagonal mean
        across = S[a][:, b].mean()
        assert within > across + margin, f"within {within:.2f} vs across {across:.2f}"
    for w, group in (("a3", "a"), ("b7", "b")):
        assert all(x.startswith(group) for x, _ in res.most_similar(w, k=5))


def test_train_word2vec_bad_input():
    corpus = two_topic_corpus(20)
    with pytest.raises(ValueError, match="model must be"):
        train_word2vec(corpus, model="glove", progress=False)
    with pytest.raises(ValueError, match="optimizer must be"):
        train_word2vec(corpus, optimizer="lbfgs", progress=False)
    with pytest.raises(ValueError, match="window must be a positive int; got 0"):
        train_word2vec(corpus, window=0, progress=False)
    with pytest.raises(ValueError, match=r"lr must lie in \(0, inf\)"):
        train_word2vec(corpus, lr=-1.0, progress=False)
    with pytest.raises(ValueError, match="min_count=1000"):
        train_word2vec(corpus, min_count=1000, progress=False)


@pytest.mark.parametrize("optimizer", ["sparse_adam", "sgd"])
def test_other_optimizers_train(optimizer):
    res = train_word2vec(
        two_topic_corpus(200), dim=8, window=2, batch_size=128, min_count=1,
        optimizer=optimizer, epochs=2, subsample_t=None, progress=False,
    )  # fmt: skip
    assert np.mean(res.losses[-3:]) < np.mean(res.losses[:3])


# ---------------------------------------------------------------------------- queries
def toy_vectors():
    """Seven words on axes (male, female, royal): 'a' and 'b' point almost the same way, and
    'man'→'king' is the same step as 'woman'→'queen'."""
    vocab = Vocab(["a", "b", "c", "man", "king", "woman", "queen"], [7, 6, 5, 4, 3, 2, 1])
    E = torch.tensor(
        [[-1, -1, 0], [-1, -1.1, 0.1], [0, 0, 1], [1, 0, 0], [1, 0, 1], [0, 1, 0], [0, 1, 1.0]]
    )
    return E, vocab


def test_cosine_similarity():
    x, Y = torch.tensor([1.0, 0.0]), torch.tensor([[2.0, 0.0], [0.0, 3.0], [-1.0, 0.0], [1, 1]])
    torch.testing.assert_close(cosine_similarity(x, Y), torch.tensor([1, 0, -1, 2**-0.5]))
    assert cosine_similarity(Y, Y).shape == (4, 4)
    torch.testing.assert_close(
        cosine_similarity(Y, Y), F.cosine_similarity(Y[:, None], Y[None], -1)
    )
    with pytest.raises(ValueError, match=r"\(2,\), \(3,\)"):
        cosine_similarity(x, torch.ones(3))


def test_most_similar_excludes_the_query_and_sorts():
    E, vocab = toy_vectors()
    out = most_similar(E, vocab, "a", k=3)
    assert out[0][0] == "b" and "a" not in [w for w, _ in out]
    sims = [s for _, s in out]
    assert sims == sorted(sims, reverse=True)
    assert abs(sims[0] - float(cosine_similarity(E[0], E[1]))) < 1e-6
    assert len(most_similar(E, vocab, "a", k=100)) == 6  # everything but the query
    # restrict: only the 3 most frequent words may answer
    assert {w for w, _ in most_similar(E, vocab, "queen", k=5, restrict=3)} <= {"a", "b", "c"}
    # a vector query excludes nothing
    assert most_similar(E, vocab, E[0], k=1)[0][0] == "a"
    with pytest.raises(ValueError, match="'zebra' is not in the vocabulary"):
        most_similar(E, vocab, "zebra")
    with pytest.raises(ValueError, match="k must be"):
        most_similar(E, vocab, "a", k=0)
    with pytest.raises(ValueError, match=r"E must be \(vocab=7, dim\), got \(3, 3\)"):
        most_similar(E[:3], vocab, "a")


def test_analogy_excludes_the_three_words():
    E, vocab = toy_vectors()
    out = analogy(E, vocab, "man", "king", "woman", k=7)
    words = [w for w, _ in out]
    assert words[0] == "queen"
    assert not {"man", "king", "woman"} & set(words) and len(words) == 4
    sims = [s for _, s in out]
    assert sims == sorted(sims, reverse=True)
    with pytest.raises(ValueError, match="'prince' is not in the vocabulary"):
        analogy(E, vocab, "man", "prince", "woman")


def test_result_helpers():
    res = train_word2vec(
        two_topic_corpus(100), dim=8, window=2, min_count=1, subsample_t=0.1, progress=False
    )
    model, vocab, losses = res  # unpacks like a tuple
    assert losses is res.losses
    assert res.vector("a1").shape == (8,)
    assert abs(res.similarity("a1", "a1") - 1) < 1e-6
    assert len(res.analogy("a1", "a2", "b1", k=3)) == 3
    assert [w for w, _ in res.most_similar("a1", k=3)] == [
        w for w, _ in most_similar(model.vectors(), vocab, "a1", k=3)
    ]


# ------------------------------------------------------------------------ the shipped runs
@pytest.mark.parametrize("model", ["skipgram", "cbow"])
def test_max_steps_gives_the_first_batches_of_the_whole_run(model):
    corpus = two_topic_corpus(300)
    kw = {"model": model, "dim": 16, "window": 3, "epochs": 2, "min_count": 1,
          "batch_size": 256 if model == "skipgram" else 64, "subsample_t": None,
          "progress": False, "seed": 3}
    whole = train_word2vec(corpus, **kw).losses
    first = train_word2vec(corpus, max_steps=5, **kw).losses
    assert len(whole) > 10 and first == whole[:5]  # the schedule still spans both epochs
    assert train_word2vec(corpus, max_steps=10_000, **kw).losses == whole
    with pytest.raises(ValueError, match="max_steps"):
        train_word2vec(corpus, max_steps=0, **kw)


@pytest.fixture(scope="module")
def chapter_vocab():
    return build_vocab(w2v.chapter_paragraphs(), min_count=5)


def test_the_shipped_runs_load_with_every_batch_loss(chapter_vocab):
    for name, batches in (("skipgram", 2392), ("cbow", 844)):
        run = w2v.load_chapter_run(name, chapter_vocab)
        E = run.model.vectors()
        assert E.shape == (len(chapter_vocab), 100) and E.dtype == torch.float32
        assert len(run.losses) == batches
        assert abs(run.losses[0] - 6 * np.log(2)) < 1e-4  # zero output vectors at the start
        assert np.mean(run.losses[-50:]) < np.mean(run.losses[:50]) - 1  # it learned
    with pytest.raises(ValueError, match="keep only the input vectors"):
        run.model.vectors("output")
    small = build_vocab([["a", "b", "a"]], min_count=1)
    with pytest.raises(ValueError, match=r"vocab \(2 words\) is not the one"):
        w2v.load_chapter_run("cbow", small)
    with pytest.raises(ValueError, match=r"one of \['cbow', 'skipgram'\]; got 'glove'"):
        w2v.load_chapter_run("glove", small)


def test_train_chapter_runs_writes_runs_that_load_back(tmp_path, monkeypatch):
    corpus = two_topic_corpus(300)
    monkeypatch.setattr(w2v, "chapter_paragraphs", lambda: corpus)
    monkeypatch.setattr(w2v, "CHAPTER_RUNS", {
        name: {**settings, "epochs": 1, "min_count": 1, "subsample_t": None, "batch_size": 512}
        for name, settings in w2v.CHAPTER_RUNS.items()})
    log = w2v.train_chapter_runs(tmp_path / "runs", progress=False)
    assert log["vocab"]["skipgram"][0] == 20
    vocab = build_vocab(corpus, min_count=1)
    for name in ("skipgram", "cbow"):
        run = w2v.load_chapter_run(name, vocab, folder=tmp_path / "runs")
        assert run.model.vectors().shape == (20, 100) and len(run.losses) >= 1
    with pytest.raises(FileNotFoundError, match="no runs.json in"):
        w2v.load_chapter_run("cbow", vocab, folder=tmp_path)
    # a vectors file with a row too few (another run's, or cut) is refused, not read as this one
    path = tmp_path / "runs" / "cbow.pt"
    state = torch.load(path, weights_only=True)
    torch.save({**state, "vectors": state["vectors"][:-1]}, path)
    with pytest.raises(ValueError, match=r"cbow.pt holds vectors of shape \(19, 100\).*20 words"):
        w2v.load_chapter_run("cbow", vocab, folder=tmp_path / "runs")


def test_record_in_manifest_lists_the_runs_with_their_command(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / w2v.FOLDER).mkdir(parents=True)
    (data / w2v.FOLDER / "cbow.pt").write_bytes(b"vectors")
    (data / "manifest.json").write_text(json.dumps({"about": "a", "files": {}}))
    monkeypatch.setenv("MINFORMER_DATA", str(data))
    assert w2v.record_in_manifest() == [f"{w2v.FOLDER}/cbow.pt"]
    files = json.loads((data / "manifest.json").read_text())["files"]
    assert files[f"{w2v.FOLDER}/cbow.pt"]["source"] == w2v.REPRODUCE


# ------------------------------------------------------------------------ the other seeds
def test_analogy_scores_count_first_and_top_five_hits():
    E, vocab = toy_vectors()
    run = w2v.Word2VecResult(w2v.InputVectors(E), vocab, [1.0])
    relations = {"male : female": [("man", "woman"), ("king", "queen"), ("prince", "princess")],
                 "other": [("a", "b"), ("c", "king")]}
    # every two pairs of a relation make one question, if all four words are in the vocabulary
    assert w2v.analogy_questions(relations, vocab) == [
        ("male : female", "man", "woman", "king", "queen"), ("other", "a", "b", "c", "king")]
    scores = w2v.analogy_scores(run, relations)
    assert list(scores) == ["male : female", "other"]  # in the relations' order
    assert scores["male : female"] == [1, 1, 1]  # woman − man + king lands on queen
    n, first, top5 = scores["other"]
    assert n == 1 and first <= top5 <= 1
    assert first == (run.analogy("a", "b", "c")[0][0] == "king")
    assert w2v.analogy_scores(run, {"none": [("x", "y"), ("z", "w")]}) == {"none": [0, 0, 0]}


def seed_corpus(n_sentences=300):
    """The two-topic corpus with a few of its words renamed to the chapter's probe words."""
    names = {"a0": "bank", "a1": "river", "a2": "shore", "b0": "money", "b1": "loan",
             "b2": "financial", "a3": "king", "b3": "france", "a4": "film", "b4": "war",
             "a5": "man", "a6": "woman", "b5": "paris", "b6": "rome", "a7": "french",
             "b7": "japan", "a8": "album", "a9": "albums", "b8": "song"}
    return [[names.get(w, w) for w in s] for s in two_topic_corpus(n_sentences)]


@pytest.fixture
def small_seed_runs(monkeypatch):
    monkeypatch.setattr(w2v, "chapter_paragraphs", seed_corpus)
    monkeypatch.setattr(w2v, "CHAPTER_RUNS", {
        name: {**settings, "dim": 8, "epochs": 1, "min_count": 1, "subsample_t": None,
               "batch_size": 512}
        for name, settings in w2v.CHAPTER_RUNS.items()})
    monkeypatch.setattr(w2v, "RESTRICT", 15)


def test_train_seed_runs_writes_what_the_chapter_prints(tmp_path, small_seed_runs, capsys):
    done = w2v.train_seed_runs([4, 5], tmp_path / "seeds", progress=False)
    assert done.startswith("total") and "1 thread(s)" in done
    assert "skipgram seed 4: analogies @1" in capsys.readouterr().out
    log = w2v.load_seed_results(tmp_path / "seeds")
    assert log["command"] == "python -m minformer.word2vec --seeds 4 5" and log["seeds"] == [4, 5]
    assert log["probe_words"] == list(w2v.PROBE_WORDS) and log["bank_words"] == list(w2v.BANK_WORDS)
    assert "seed" not in log["runs"]["cbow"] and log["runs"]["cbow"]["dim"] == 8
    assert log["relations"]["present : past"][0] == ["play", "played"]
    assert set(log["results"]) == {"4", "5"} and set(log["seconds"]) == {
        "skipgram-seed4", "cbow-seed4", "skipgram-seed5", "cbow-seed5"}
    runs = log["results"]["4"]
    for summary in runs.values():
        assert set(summary) == {"neighbours", "bank", "examples", "analogies", "last_loss"}
        assert all(len(near) == w2v.NEIGHBOURS for near in summary["neighbours"].values())
        assert list(summary["examples"]) == ["man : king :: woman", "paris : france :: rome",
                                             "france : french :: japan", "album : albums :: song"]
        assert all(-1 <= c <= 1 for c in summary["bank"].values())
        # the test set's words are missing from this corpus: no question is asked
        assert summary["analogies"]["present : past"] == [0, 0, 0]
    assert runs["skipgram"] != log["results"]["5"]["skipgram"]  # another seed, another run
    # seeded: the same seed gives the same results
    w2v.train_seed_runs([4], tmp_path / "again", progress=False)
    assert w2v.load_seed_results(tmp_path / "again")["results"]["4"] == runs
    with pytest.raises(FileNotFoundError, match="train_seed_runs"):
        w2v.load_seed_results(tmp_path)


@pytest.mark.parametrize("seeds, message", [([], "non-empty list"), ([1, 1], "differ"),
                                            ([-1], "seed must be an int ≥ 0"), ("12", "list")])
def test_train_seed_runs_refuses_bad_seeds_before_training(seeds, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        w2v.train_seed_runs(seeds, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_the_seeds_command_trains_into_out_or_refuses(tmp_path, small_seed_runs, capsys):
    assert w2v.main(["--seeds", "2", "--out", str(tmp_path / "s")]) == 0
    assert [p.name for p in (tmp_path / "s").iterdir()] == ["results.json"]
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("total")
    for argv, message in ((["--seeds", "-1"], "seed must be an int ≥ 0"),
                          (["--seeds", "1", "--threads", "0"], "threads")):
        with pytest.raises(SystemExit) as exit_:
            w2v.main([*argv, "--out", str(tmp_path / "bad")])
        assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_the_shipped_seed_results_cover_the_chapters_questions():
    log = w2v.load_seed_results()  # checked against data/manifest.json
    assert log["seeds"] == list(w2v.OTHER_SEEDS) and log["command"] == w2v.seeds_command()
    assert log["runs"] == {name: {k: v for k, v in s.items() if k != "seed"}
                           for name, s in w2v.CHAPTER_RUNS.items()}
    assert log["relations"] == {r: [list(p) for p in pairs]
                                for r, pairs in w2v.ANALOGY_RELATIONS.items()}
    for seed in ("1", "2", "3"):
        for name in ("skipgram", "cbow"):
            summary = log["results"][seed][name]
            assert list(summary["neighbours"]) == list(w2v.PROBE_WORDS)
            # the chapter's 60 questions: 10 per relation (budapest is below min_count)
            assert all(row[0] == 10 for row in summary["analogies"].values())
            assert 1.0 < summary["last_loss"] < 2.3
