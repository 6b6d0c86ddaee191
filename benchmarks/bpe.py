"""Our BPE (minformer.tokenizer) against HuggingFace `tokenizers`, on the translation corpus.

Trains both byte-level BPEs to the same vocabulary size on the train split (English and Spanish
sentences together, as chapter 13's shared vocabulary), then prints:
  - training time,
  - time to encode the whole train split (ours starts with an empty word cache),
  - tokens per sentence on the held-out valid split (lower = better compression).

Run (heavy, so under the shared lock):
    flock /tmp/heavy.lock .venv/bin/python benchmarks/bpe.py [--vocab-size 8000] [--repeats 3]
Times are medians over --repeats runs, ours and theirs interleaved (alternating which goes first).
"""

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "code"))

from interleave import interleaved, timed

from minformer.tokenizer import DEFAULT_SPECIAL_TOKENS, BPETokenizer


def read_sentences(path: Path) -> list[str]:
    """English and Spanish sentences of a translation TSV (en <TAB> es <TAB> attribution)."""
    lines = path.read_text(encoding="utf-8").splitlines()[1:]  # skip the header
    sentences = []
    for line in lines:
        en, es, _ = line.split("\t")
        sentences += [en, es]
    return sentences


def train_theirs(texts, vocab_size):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=list(DEFAULT_SPECIAL_TOKENS),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    return tok


def measure(repeats: int, vocab_size: int = 8000, data: Path = REPO / "data" / "translation"):
    """Seconds per run (lists) of training and encoding, ours and theirs, interleaved; the two
    tokenizers; tokens per held-out sentence of each."""
    train = read_sentences(data / "train.tsv")
    held_out = read_sentences(data / "valid.tsv")

    def ours_run():  # a fresh tokenizer each time, so encoding starts with an empty word cache
        train_s, tok = timed(lambda: BPETokenizer.train(train, vocab_size))()
        enc_s, ids = timed(lambda: tok.encode_batch(train))()
        return {"ours_train": train_s, "ours_enc": enc_s}, tok, ids

    def theirs_run():
        train_s, tok = timed(lambda: train_theirs(train, vocab_size))()
        enc_s, _ = timed(lambda: tok.encode_batch(train))()
        enc1_s, _ = timed(lambda: [tok.encode(s) for s in train])()
        return {"theirs_train": train_s, "theirs_enc": enc_s, "theirs_enc1": enc1_s}, tok, None

    runs = interleaved({"ours": ours_run, "theirs": theirs_run}, repeats)
    t = {k: [r[0][k] for r in runs[who]] for who in runs for k in runs[who][0][0]}
    (_, ours, ours_ids), (_, theirs, _) = runs["ours"][-1], runs["theirs"][-1]
    assert all(ours.decode(ids) == s for ids, s in zip(ours_ids, train)), "round trip failed"
    ours_tps = sum(len(ours.encode(s)) for s in held_out) / len(held_out)
    theirs_tps = sum(len(e.ids) for e in theirs.encode_batch(held_out)) / len(held_out)
    return t, ours, theirs, ours_tps, theirs_tps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", type=Path, default=REPO / "data" / "translation")
    args = parser.parse_args()

    print(
        f"train split of {args.data}; vocab_size {args.vocab_size}; {args.repeats} repeats"
    )
    t, ours, theirs, ours_tps, theirs_tps = measure(args.repeats, args.vocab_size, args.data)
    med = {k: statistics.median(v) for k, v in t.items()}

    print(f"vocabulary: ours {ours.vocab_size}, tokenizers {theirs.get_vocab_size()}")
    print(f"{'':34}{'ours':>10}{'tokenizers':>12}")
    print(f"{'train to vocab (s)':34}{med['ours_train']:10.2f}{med['theirs_train']:12.2f}")
    print(
        f"{'encode train split (s)':34}{med['ours_enc']:10.2f}{med['theirs_enc']:12.2f}"
        "   (tokenizers: encode_batch, multi-threaded)"
    )
    print(f"{'  one sentence at a time (s)':34}{'':10}{med['theirs_enc1']:12.2f}")
    print(
        f"{'tokens / held-out sentence':34}{ours_tps:10.3f}{theirs_tps:12.3f}"
        f"   (ours / theirs = {ours_tps / theirs_tps:.4f})"
    )
    print(
        f"medians over {args.repeats} runs; all runs: "
        + ", ".join(f"{k} {[round(x, 2) for x in v]}" for k, v in t.items())
    )


if __name__ == "__main__":
    main()
