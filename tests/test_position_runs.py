"""Chapter 8's experiment that needs order (minformer.position_runs): the task, the model, the
loop, the shipped runs and the command that retrains them."""

import math

import pytest
import torch

import minformer.position_runs as pr


def test_make_pairs_gives_each_sorted_set_and_a_swapped_twin():
    X, y = pr.make_pairs(50, gen=torch.Generator().manual_seed(0))
    assert X.shape == (100, pr.T) and y.tolist() == [1] * 50 + [0] * 50
    sorted_, swapped = X[:50], X[50:]
    assert torch.equal(sorted_, sorted_.sort(dim=1).values)
    assert (sorted_[:, 1:] > sorted_[:, :-1]).all() and int(X.max()) < pr.VOCAB
    # the twin holds the same tokens, two of them swapped, so it is never sorted
    assert torch.equal(swapped.sort(dim=1).values, sorted_)
    assert ((swapped != sorted_).sum(dim=1) == 2).all()
    X9, _ = pr.make_pairs(3, t=9, gen=torch.Generator().manual_seed(0))
    assert X9.shape == (6, 9)


def test_the_variants_differ_only_in_their_positions():
    counts = {p: sum(w.numel() for w in pr.SortedClassifier(p).parameters())
              for p in pr.POSITIONS}
    assert counts["none"] == counts["sinusoidal"] == counts["learned"] - pr.T * 32
    with pytest.raises(ValueError, match="positions must be one of"):
        pr.SortedClassifier("rotary")


def test_training_is_seeded_and_its_first_steps_do_not_depend_on_the_total():
    model, curve = pr.train("sinusoidal", steps=50, seed=3)
    _, again = pr.train("sinusoidal", steps=25, seed=3)
    assert [step for step, _, _ in curve] == [25, 50] and curve[:1] == again
    assert pr.train("sinusoidal", steps=25, seed=4)[1] != again
    measured = pr.measure({"none": pr.train("none", steps=25, seed=3)[0], "sinusoidal": model})
    assert set(measured) == {"p_sorted", "long", "called_sorted_12"}
    assert list(measured["long"]) == list(pr.LONG)
    # without positions the two sequences of a pair are the same input
    p_none = measured["p_sorted"]["none"]
    assert p_none[0] == pytest.approx(p_none[1], abs=1e-6)
    with pytest.raises(ValueError, match="steps"):
        pr.train("none", steps=0)


def test_the_shipped_runs_load_and_say_what_the_chapter_says():
    log = pr.load_results()
    assert log["seeds"] == list(pr.SEEDS) and sorted(log["runs"]) == list(pr.SEEDS)
    for run in log["runs"].values():
        curves = run["curves"]
        assert all(len(c) == pr.STEPS // pr.EVAL_EVERY for c in curves.values())
        assert curves["none"][-1][2] == 0.5
        assert abs(curves["none"][-1][1] - math.log(2)) < 1e-3
        assert min(curves["sinusoidal"][-1][2], curves["learned"][-1][2]) > 0.95
        assert sorted(run["long"]) == list(pr.LONG)


def test_train_runs_writes_results_that_load_back(tmp_path):
    line = pr.train_runs(tmp_path / "runs", seeds=[3], steps=25)
    assert "of CPU" in line
    log = pr.load_results(tmp_path / "runs")
    assert log["seeds"] == [3] and log["steps"] == 25 and log["command"] == pr.REPRODUCE
    assert [step for step, _, _ in log["runs"][3]["curves"]["learned"]] == [25]
    with pytest.raises(FileNotFoundError, match="no results.json in"):
        pr.load_results(tmp_path)
