"""minformer.neighbours: chapter 6's neighbour task, whose seed-0 models the figure ch06-heads
runs (tests/test_figures_ch06.py compares the figure with them)."""

import functools

import torch

from minformer import neighbours


def test_a_batch_targets_the_previous_and_the_next_word():
    x, prev, nxt = neighbours.make_batch(5, torch.Generator().manual_seed(0))
    assert x.shape == prev.shape == nxt.shape == (5, neighbours.T)
    assert torch.equal(prev[:, 1:], x[:, :-1]) and torch.equal(nxt[:, :-1], x[:, 1:])
    assert (prev[:, 0] == neighbours.IGNORE).all() and (nxt[:, -1] == neighbours.IGNORE).all()


def test_encode_and_decode_give_back_the_same_model():
    torch.manual_seed(0)
    model = neighbours.NeighbourModel(8, 2).eval()
    again = neighbours.decode(neighbours.encode(model), 2)
    x = torch.randint(0, neighbours.V, (3, neighbours.T))
    with torch.no_grad():
        for a, b in zip(model(x), again(x)):
            assert torch.equal(a, b)


def test_a_short_run_is_stored_and_read_back(tmp_path, monkeypatch):
    short = functools.partial(neighbours.train_neighbour_model, d_model=8, steps=3)
    monkeypatch.setattr(neighbours, "train_neighbour_model", short)
    record = neighbours.train_and_store(tmp_path)
    assert neighbours.stored(tmp_path) == record
    assert record["words"] == neighbours.WORDS and set(record["models"]) == {"1", "2"}
    loss, acc = neighbours.loss_and_accuracy(neighbours.decode(record["models"]["2"], 2),
                                             *neighbours.make_batch(4, torch.Generator()))
    assert loss.item() > 0 and all(0 <= a <= 1 for a in acc)
    for h, accuracy in record["accuracy"].items():
        assert len(accuracy) == 2 and all(0 <= a <= 1 for a in accuracy), (h, accuracy)


def test_the_shipped_models_are_the_figures():
    one, two = neighbours.figure_models()
    shipped = neighbours.stored()["models"]
    assert neighbours.encode(one) == shipped["1"] and neighbours.encode(two) == shipped["2"]
