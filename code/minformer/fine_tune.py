"""Chapter 12's fine-tuning experiment: a new linear head on an encoder's body, trained on a few
labelled sentences, from the encoder's trained weights or from its random start.

The task (:func:`blank_task`): the English sentences of the Tatoeba training split that contain
exactly one word of four short topic lists (:data:`TOPICS`: family, food and drink, animals,
places), with that word hidden; the label is the list it came from. The first :data:`TEST`
sentences of a fixed shuffle are the test set, the rest the pool that labels are drawn from.

Two encoders read it (:class:`Encoder`):

- the masked language model that chapter 12 pretrains (:func:`masked_lm_encoder`), reading the
  sentences in WikiText's spelling with ``<mask>`` at the blank;
- the encoder half of chapter 13's translator (:func:`translator_encoder`), reading Tatoeba's
  spelling with the word *something* at the blank.

:func:`fine_tune` trains one :class:`BlankClassifier` and returns its test accuracy. The chapter
builds all of this in its own cells and runs seed 0 of each comparison live; ``python -m
minformer.fine_tune`` (:func:`train_runs`) ran seeds 0, 1 and 2 with this module's copy and
ships every accuracy in ``data/checkpoints/fine-tune/results.json`` (checked against
``data/manifest.json``, read by :func:`load_results`). The chapter checks that its cells and
this module compute the same thing. For the translator it also chooses each start's recipe
(steps and learning rate) among :data:`GRID` on a validation split (:func:`choose_recipe`) and
ships that comparison too ("translator_chosen"), and the masked LM's linear probe of the
chapter's exercise (:data:`PROBE`: the body frozen, only the head trained; "probe").
"""

from __future__ import annotations

import collections
import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import torch
import torch.nn.functional as F

from . import validate
from .data import cpu_name, load_translation_pairs, read_shipped, retrain_command, text_to_words
from .masks import padding_mask
from .pretrain import MASK
from .train import train
from .transformer import EncoderOnly, Transformer
from .utils import data_dir, evaluating, pick_device, seed_everything

FOLDER = "checkpoints/fine-tune"  # under data/
REPRODUCE = "python -m minformer.fine_tune"
TEST = 1000  # test sentences, the first of the shuffled task
LABELS = (50, 200, 1000)  # labelled pool sentences per fine-tune
SEEDS = (0, 1, 2)  # the shipped seeds (the chapter runs seed 0 itself)
STARTS = ("scratch", "pretrained")
# steps of 32 sentences and AdamW's learning rate, for each encoder
RECIPES = {"mlm": dict(steps=150, lr=1e-3), "translator": dict(steps=40, lr=3e-4)}
# The translator's comparison chooses each start's recipe on a validation split instead
# (:func:`choose_recipe`): the last VALID sentences of the pool, never drawn as labels there;
# the same four choices for both starts, the two recipes above among them.
VALID = 500
GRID = tuple(dict(steps=steps, lr=lr) for steps in (40, 150) for lr in (3e-4, 1e-3))
# The chapter's linear-probe exercise: the masked LM's body frozen, only the head trained, at
# these label counts and this recipe (the chapter's 150 steps, the head's learning rate 1e-2).
PROBE_LABELS = (200, 1000)
PROBE = dict(steps=150, lr=1e-2, freeze=True)

TOPICS = {
    "family": "mother father mom dad brother brothers sister sisters son sons daughter "
              "daughters wife husband parents uncle aunt grandmother grandfather grandma "
              "grandpa cousin cousins",
    "food and drink": "bread water coffee tea milk wine beer meat apple apples cake soup rice "
                      "eggs egg cheese fruit juice sugar chocolate pizza breakfast lunch dinner "
                      "food vegetables potatoes salad sandwich",
    "animal": "dog dogs cat cats horse horses bird birds cow cows pig pigs sheep mouse mice "
              "rabbit lion lions bear snake snakes animal animals puppy duck",
    "place": "house school station hospital library park office store restaurant church hotel "
             "airport museum bank shop beach city village town",
}
CLASSES = tuple(TOPICS)
TOPIC_OF = {word: c for c, words in enumerate(TOPICS.values()) for word in words.split()}


def hide_topic_word(sentence: str) -> tuple[str, int] | None:
    """(text, class): ``sentence`` in WikiText's spelling (lower case, no punctuation, *don't*
    as *don t*) with its one topic word shown as ``<mask>``; None unless it has exactly
    one topic word. ``"How much do you feed your dog?"`` → ``("how much do you feed your
    <mask>", 2)``."""
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
    words = text_to_words(sentence.replace("'", " '").replace("’", " ’"))
    hits = [i for i, w in enumerate(words) if w in TOPIC_OF]
    if len(hits) != 1:
        return None
    label = TOPIC_OF[words[hits[0]]]
    words[hits[0]] = "<mask>"
    return " ".join(words), label


class BlankTask(NamedTuple):
    """The task's sentences in their fixed shuffled order (the first :data:`TEST` are the test
    set): ``texts`` with ``<mask>``, ``english`` the first Tatoeba sentence that gives each text,
    ``labels`` (n,) long."""

    texts: list[str]
    english: list[str]
    labels: torch.Tensor


def blank_task(pairs: Sequence[tuple[str, str]] | None = None) -> BlankTask:
    """The task from the English side of ``pairs`` (default: the Tatoeba training split): every
    distinct text that :func:`hide_topic_word` makes, unless two sentences give it with two
    different labels (*i love my ___*), shuffled with seed 0."""
    if pairs is None:
        pairs = load_translation_pairs("train")
    labels_of = collections.defaultdict(set)
    first_english = {}  # text -> the first sentence giving it
    for english in sorted({en for en, _ in pairs}):
        hidden = hide_topic_word(english)
        if hidden is not None:
            labels_of[hidden[0]].add(hidden[1])
            first_english.setdefault(hidden[0], english)
    texts = sorted(t for t, labels in labels_of.items() if len(labels) == 1)
    if len(texts) <= TEST:
        raise ValueError(f"the task needs more than {TEST} sentences to test on and draw "
                         f"labels from; these pairs give {len(texts)}")
    order = torch.randperm(len(texts), generator=torch.Generator().manual_seed(0))
    texts = [texts[i] for i in order.tolist()]
    labels = torch.tensor([next(iter(labels_of[t])) for t in texts])
    return BlankTask(texts, [first_english[t] for t in texts], labels)


class Encoder(NamedTuple):
    """An encoder to fine-tune: ``new_body()`` builds its body at its random start, ``weights``
    its trained state, ``ids`` (n, t) every sentence of the task as it reads them (padded with
    ``pad``) and ``blank`` (n,) the position the head reads in each."""

    new_body: Callable[[], torch.nn.Module]
    weights: dict
    ids: torch.Tensor
    blank: torch.Tensor
    pad: int


def masked_lm_encoder(task: BlankTask, tokenizer, model: EncoderOnly) -> Encoder:
    """Chapter 12's masked language model (its :class:`~minformer.transformer.EncoderOnly` and
    the BPE it was trained with) reading the task's texts, the head at ``<mask>``."""
    ids, _ = tokenizer.pad([tokenizer.encode(t, allowed_special={"<mask>"})
                            for t in task.texts])  # (n, t)
    config = model.config
    return Encoder(lambda: EncoderOnly(config),
                   {k: v.detach().clone() for k, v in model.state_dict().items()},
                   ids, (ids == MASK).int().argmax(dim=1), tokenizer.pad_id)


def translator_text(english: str) -> str:
    """The sentence as the translator reads it, its topic word replaced by *something*:
    ``"How much do you feed your dog?"`` → ``"How much do you feed your something?"``."""
    def swap(word):
        if word.group(0).lower() not in TOPIC_OF:
            return word.group(0)
        return "Something" if word.start() == 0 else "something"
    return re.sub(r"[A-Za-z]+", swap, english)


def with_blank(tokenizer, text: str) -> tuple[list[int], int]:
    """(token ids of ``text``, position of the first token of *something* in them)."""
    at = text.lower().find("something")
    if at < 0:
        raise ValueError(f"no 'something' in {text!r}")
    before = text[:at].rstrip()
    blank = len(tokenizer.encode(before, add_eos=False)) if before else 0
    return tokenizer.encode(text), blank


class TranslatorEncoder(torch.nn.Module):
    """The encoder half of a translator (:class:`~minformer.transformer.Transformer`), sharing its
    modules: ids (batch, s) -> (batch, s, d)."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.config = model.config
        self.embed, self.layers = model.src_embed, model.encoder

    def hidden(self, ids: torch.Tensor) -> torch.Tensor:
        mask = padding_mask(tokens=ids, pad_id=self.config.pad_id)
        return self.layers(self.embed(ids), mask)  # (batch, s, d)


def translator_encoder(task: BlankTask, translator) -> Encoder:
    """The encoder of a :class:`~minformer.translator.Translator` reading the task's sentences
    in Tatoeba's spelling, the head at *something*."""
    tokenizer, config = translator.tokenizer, translator.model.config
    read = [with_blank(tokenizer, translator_text(e)) for e in task.english]
    return Encoder(lambda: TranslatorEncoder(Transformer(config)),
                   {k: v.detach().clone()
                    for k, v in TranslatorEncoder(translator.model).state_dict().items()},
                   tokenizer.pad([ids for ids, _ in read])[0],
                   torch.tensor([at for _, at in read]), tokenizer.pad_id)


class BlankClassifier(torch.nn.Module):
    """An encoder body and a new linear head read at the blank: ids (batch, t) and the blank's
    position in each row (batch,) -> class logits (batch, C)."""

    def __init__(self, body: torch.nn.Module, n_classes: int):
        super().__init__()
        self.body = body
        self.head = torch.nn.Linear(body.config.d_model, n_classes)

    def forward(self, ids: torch.Tensor, blank: torch.Tensor) -> torch.Tensor:
        h = self.body.hidden(ids)  # (batch, t, d)
        return self.head(h[torch.arange(len(ids)), blank])  # (batch, C)


def trim(ids: torch.Tensor, pad: int) -> torch.Tensor:
    """Drop the padding columns that no row uses: (batch, t) -> (batch, t')."""
    return ids[:, :int((ids != pad).sum(1).max())]


@torch.no_grad()
def test_accuracy(model: BlankClassifier, encoder: Encoder, labels: torch.Tensor,
                  device=None, rows: slice = slice(0, TEST)) -> float:
    """Accuracy on the :data:`TEST` test sentences (or the task's ``rows``), read in batches of
    alike length."""
    device = device if device is not None else next(model.parameters()).device
    ids, at, y = encoder.ids[rows], encoder.blank[rows], labels[rows].to(device)
    right = 0
    for batch in (ids != encoder.pad).sum(1).argsort().split(250):  # short to long
        logits = model(trim(ids[batch], encoder.pad).to(device), at[batch].to(device))
        right += (logits.argmax(-1) == y[batch.to(device)]).sum().item()
    return right / len(y)


def fine_tune(encoder: Encoder, labels: torch.Tensor, n_labels: int, seed: int,
              from_pretrained: bool, steps: int = 150, lr: float = 1e-3, device=None,
              validation: bool = False, freeze: bool = False) -> float:
    """Train a :class:`BlankClassifier` on ``n_labels`` sentences drawn from the pool (with
    ``seed``: which sentences, their order and the head's start), its body at ``encoder``'s
    random start or ``from_pretrained`` its trained weights, for ``steps`` steps of 32 with
    AdamW at ``lr``; returns its test accuracy. With ``validation`` the labels come from the
    pool less its last :data:`VALID` sentences, and the accuracy is measured on those. With
    ``freeze`` only the head learns (a linear probe: the body gets no gradient and the optimizer
    only the head's parameters)."""
    pool = len(labels) - TEST - (VALID if validation else 0)
    n_labels = validate.integer(n_labels, "n_labels", minimum=1)
    if n_labels > pool:
        raise ValueError(f"n_labels={n_labels} is more than the pool's {pool} sentences")
    steps = validate.positive_int(steps, "steps")
    device = pick_device(device) if device is None or isinstance(device, str) else device
    g = torch.Generator().manual_seed(seed)
    chosen = TEST + torch.randperm(pool, generator=g)[:n_labels]
    X, at = encoder.ids[chosen].to(device), encoder.blank[chosen].to(device)
    y = labels[chosen].to(device)
    seed_everything(seed)
    body = encoder.new_body()  # the random start ...
    if from_pretrained:
        body.load_state_dict(encoder.weights)  # ... or the trained one
    model = BlankClassifier(body, len(CLASSES)).to(device)
    body.requires_grad_(not freeze)  # frozen: no gradients
    learned = [p for p in model.parameters() if p.requires_grad]

    def batches():  # 32 of the n_labels at a time
        while True:
            yield torch.randint(n_labels, (32,), generator=g)

    def loss_fn(model, rows):
        return F.cross_entropy(model(trim(X[rows], encoder.pad), at[rows]), y[rows])

    optimizer = torch.optim.AdamW(learned, lr=lr, weight_decay=0.01)
    train(model, batches(), loss_fn, optimizer, steps=steps, progress=False)
    with evaluating(model):
        if validation:
            return test_accuracy(model, encoder, labels, device, slice(TEST + pool, None))
        return test_accuracy(model, encoder, labels, device)


def choose_recipe(encoder: Encoder, labels: torch.Tensor, from_pretrained: bool,
                  grid: Sequence[dict] | None = None, label_counts: Sequence[int] | None = None,
                  device=None) -> tuple[dict, dict[str, list[float]]]:
    """The recipe of ``grid`` with the best mean validation accuracy (seed 0, each of
    ``label_counts``; :func:`fine_tune` with ``validation``), and every recipe's accuracies
    ``{"steps@lr": [accuracy for each label count]}``. Ties go to the first in ``grid``.
    Defaults: :data:`GRID` and :data:`LABELS`."""
    grid = GRID if grid is None else grid
    label_counts = LABELS if label_counts is None else label_counts
    scores = {f"{r['steps']}@{r['lr']:g}": [
        fine_tune(encoder, labels, n, 0, from_pretrained, device=device, validation=True, **r)
        for n in label_counts] for r in grid}
    means = [sum(v) / len(v) for v in scores.values()]
    return dict(grid[means.index(max(means))]), scores


def compare(encoder: Encoder, labels: torch.Tensor, recipe: dict,
            seeds: Sequence[int] = SEEDS, label_counts: Sequence[int] = LABELS,
            device=None, starts: Sequence[str] = STARTS) -> dict[str, dict[int, list[float]]]:
    """Every fine-tune of the chapter's comparison for one encoder:
    ``{start: {n_labels: [accuracy for each seed]}}``, start "scratch" or "pretrained" (those
    of ``starts``). ``recipe``: one for both starts, or ``{start: recipe}``."""
    recipes = recipe if set(recipe) == set(STARTS) else {start: recipe for start in STARTS}
    return {start: {n: [fine_tune(encoder, labels, n, seed, start == "pretrained",
                                  device=device, **recipes[start]) for seed in seeds]
                    for n in label_counts} for start in starts}


def summarize(accuracy: dict[str, dict[int, list[float]]]) -> str:
    """One comparison as a table, a row per label count: test accuracy from scratch and from
    the trained weights (mean ± standard deviation over seeds), and their paired difference in
    points (mean ± sd, and each seed's)."""
    import statistics

    def spread(xs, fmt):  # the standard deviation with fmt's precision, no width or sign
        sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
        return f"{format(statistics.fmean(xs), fmt)} ± {format(sd, fmt.lstrip('+0123456789'))}"

    lines = ["labels   from scratch      pretrained       pretrained − scratch (points)"]
    for n, scratch in accuracy["scratch"].items():
        d = [100 * (b - a) for a, b in zip(scratch, accuracy["pretrained"][n])]
        lines.append(f"{n:6d}   {spread(scratch, '6.1%')}   "
                     f"{spread(accuracy['pretrained'][n], '6.1%')}   {spread(d, '+5.1f')} "
                     f"({', '.join(f'{x:+.1f}' for x in d)})")
    return "\n".join(lines)


def train_runs(out=None, seeds: Sequence[int] = SEEDS, threads: int | None = 1) -> str:
    """Run both comparisons (:func:`compare`: the masked LM shipped by :mod:`minformer.pretrain`
    and chapter 13's shipped translator) on the CPU and write ``out``/results.json (default
    data/checkpoints/fine-tune): every accuracy, the seeds, recipes, torch's version, the threads
    and the machine. Returns the two tables and the time it took."""
    from .pretrain import load_pretrained, load_pretrained_tokenizer
    from .translator import Translator

    if threads is not None:
        torch.set_num_threads(validate.positive_int(threads, "threads"))
    seeds = [validate.integer(s, "seed", minimum=0) for s in seeds]
    out = Path(out) if out is not None else data_dir() / FOLDER
    start, cpu = time.perf_counter(), time.process_time()
    task = blank_task()
    tokenizer = load_pretrained_tokenizer()
    mlm, _ = load_pretrained("mlm", tokenizer, "cpu")
    encoders = {"mlm": masked_lm_encoder(task, tokenizer, mlm),
                "translator": translator_encoder(task, Translator.load(device="cpu"))}
    chosen, validation = {}, {}  # the translator's recipe for each start, on validation
    for begin in STARTS:
        chosen[begin], validation[begin] = choose_recipe(
            encoders["translator"], task.labels, begin == "pretrained", device="cpu")
    accuracy = {"mlm": compare(encoders["mlm"], task.labels, RECIPES["mlm"], seeds, LABELS,
                               device="cpu"),
                "translator": compare(encoders["translator"], task.labels, RECIPES["translator"],
                                      seeds, LABELS, device="cpu"),
                "translator_chosen": {}}
    accuracy["probe"] = compare(encoders["mlm"], task.labels, PROBE, seeds, PROBE_LABELS,
                                device="cpu")
    for begin in STARTS:  # a start that chose the old recipe has its runs already
        old = chosen[begin] == RECIPES["translator"]
        accuracy["translator_chosen"][begin] = (
            accuracy["translator"][begin] if old else
            compare(encoders["translator"], task.labels, chosen[begin], seeds, LABELS,
                    device="cpu", starts=[begin])[begin])
    log = {"command": REPRODUCE, "seeds": seeds, "labels": list(LABELS), "test": TEST,
           "recipes": RECIPES, "valid": VALID, "grid": list(GRID), "chosen": chosen,
           "validation": validation, "probe": PROBE, "torch": torch.__version__,
           "threads": torch.get_num_threads(), "machine": cpu_name(), "accuracy": accuracy}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(log, indent=1) + "\n", encoding="utf-8")
    tables = "\n\n".join(f"{name}\n{summarize(acc)}" for name, acc in accuracy.items())
    return (f"{tables}\ntotal {time.perf_counter() - start:.0f} s of wall clock, "
            f"{time.process_time() - cpu:.0f} s of CPU, {torch.get_num_threads()} thread(s)")


def load_results(folder=None) -> tuple[dict[str, dict[str, dict[int, list[float]]]], dict]:
    """The shipped accuracies (results.json, checked against data/manifest.json, or read from
    ``folder``): ``{encoder: {start: {n_labels: [accuracy for each seed]}}}``, encoder "mlm" or
    "translator", and the rest of the file (seeds, recipes, torch, threads, machine)."""
    log = json.loads(read_shipped(FOLDER, "results.json", folder, "train_runs"))
    accuracy = {name: {start: {int(n): runs for n, runs in by_n.items()}
                       for start, by_n in by_start.items()}
                for name, by_start in log.pop("accuracy").items()}
    return accuracy, log


def main(argv=None) -> int:
    """``python -m minformer.fine_tune [--out DIR] [--seeds S ...] [--threads N]``: rerun chapter
    12's two fine-tuning comparisons (:func:`minformer.data.retrain_command`)."""
    return retrain_command(
        argv, FOLDER, REPRODUCE,
        "Rerun chapter 12's fine-tuning comparisons (the masked LM's and the translator's "
        "encoder against their random starts; 50, 200 and 1,000 labels; seeds 0, 1 and 2) into "
        "data/checkpoints/fine-tune, choosing the translator's recipes on validation first, "
        "and the masked LM's linear probe. About 15 minutes of CPU on one thread.",
        lambda args: train_runs(args.out, args.seeds, args.threads), seeds=SEEDS)


if __name__ == "__main__":
    raise SystemExit(main())
