"""The cross-attention explorer: one self-contained, deterministic, XSS-safe HTML fragment."""

import json
import re
import shutil
import subprocess

import numpy as np
import pytest
import torch

from minformer.explorer import (
    _json_for_script,
    attention_explorer_html,
    examples_from_translator,
    save_explorer,
)
from minformer.tokenizer import BPETokenizer
from minformer.transformer import Transformer, TransformerConfig
from minformer.translator import Translator


def _weights(layers, heads, t, s, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(layers, heads, t, s, generator=g), dim=-1)


def _examples(n=3, layers=2, heads=4, t=5, s=6):
    return [{"source": [f"en{k}_{i}" for i in range(s)], "target": [f"es{k}_{i}" for i in range(t)],
             "weights": _weights(layers, heads, t, s, seed=k)} for k in range(n)]


def _data(fragment):
    """The JSON the script carries, parsed back."""
    return json.loads(re.search(r"D = (\{.*?\});\n", fragment, re.S).group(1))


# ---------------------------------------------------------------- structure


def test_one_self_contained_fragment():
    h = attention_explorer_html(_examples(), title="Demo")
    assert h.startswith('<div class="mfx tex2jax_ignore mathjax_ignore" data-mfx="mfx-') and h.endswith("</div>")
    assert h.count("<style>") == 1 and h.count("<script>") == 1 and h.count("</script>") == 1
    for external in ("src=", "href=", "<link", "http://", "https://", "@import", "url("):
        assert external not in h, external  # no CDN, no file beside it
    for role in ("sentence", "layer", "head", "src", "tgt", "heat", "hint"):
        assert f'data-role="{role}"' in h
    uid = re.search(r'data-mfx="(mfx-[0-9a-f]{12})"', h).group(1)
    assert f'var ID = "{uid}"' in h and f'id="{uid}"' in h
    assert "average of heads" in h and "needs JavaScript" in h  # a note until the script runs


def test_data_layout_and_rounding():
    ex = _examples(n=2, layers=2, heads=3, t=4, s=5)
    d = _data(attention_explorer_html(ex))
    assert (d["layers"], d["heads"], d["scale"]) == (2, 3, 1000)
    assert [e["src"] for e in d["examples"]] == [e["source"] for e in ex]
    assert d["examples"][0]["label"] == "en0_0 en0_1 en0_2 en0_3 en0_4"
    w = np.array(d["examples"][1]["w"])
    assert w.shape == (2, 3, 4, 5) and w.dtype.kind == "i"
    assert np.abs(w / 1000 - ex[1]["weights"].numpy()).max() <= 0.0005 + 1e-9


def test_deterministic_and_distinct_ids():
    ex = _examples()
    a, b = attention_explorer_html(ex), attention_explorer_html(_examples())
    assert a == b  # re-running a notebook stores the same output
    ids = {re.search(r'data-mfx="([^"]+)"', h).group(1)
           for h in (a, attention_explorer_html(ex, title="Other"), attention_explorer_html(ex[:2]))}
    assert len(ids) == 3  # different explorers on one page do not clash


def test_tensor_array_and_nested_list_give_the_same_page():
    ex = _examples(n=1)
    w = ex[0]["weights"]
    pages = {attention_explorer_html([dict(ex[0], weights=v)]) for v in (w, w.numpy(), w.tolist(), w.double())}
    assert len(pages) == 1


def test_labels_names_and_title_are_escaped():
    ex = _examples(n=1)
    ex[0]["label"] = "x" * 100
    h = attention_explorer_html(ex, title="<b>T</b> & co", source_name="Inglés <en>", target_name="Español")
    assert "&lt;b&gt;T&lt;/b&gt; &amp; co" in h and "<b>T</b>" not in h
    assert "Inglés &lt;en&gt;" in h
    assert len(_data(h)["examples"][0]["label"]) == 60


def test_hostile_tokens_cannot_escape_the_script():
    evil = ["</script><script>alert(1)</script>", "<!--", "a&b", '"q"', "'s", "\u2028", "é<\\/"]
    ex = [{"source": evil, "target": ["<img src=x onerror=alert(1)>", "</SCRIPT>"],
           "weights": _weights(1, 2, 2, len(evil))}]
    h = attention_explorer_html(ex)
    assert h.count("</script>") == 1 and h.lower().count("</script") == 1
    assert "<script>alert" not in h and "<img" not in h and "<!--" not in h
    script = h[h.index("<script>"): h.index("</script>")]
    assert "\u2028" not in script
    d = _data(h)  # and the tokens come back exactly
    assert d["examples"][0]["src"] == evil
    assert d["examples"][0]["tgt"] == ["<img src=x onerror=alert(1)>", "</SCRIPT>"]
    assert "innerHTML" not in h  # tokens are written as text


def test_json_for_script():
    text = _json_for_script({"a": "</script>&<!--\u2029"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2029" not in text
    assert json.loads(text) == {"a": "</script>&<!--\u2029"}


def test_size_bound_for_a_chapter_sized_explorer():
    ex = _examples(n=30, layers=2, heads=4, t=12, s=12)
    size = len(attention_explorer_html(ex).encode("utf-8"))
    # 30 sentences × 2 layers × 4 heads of 12 × 12 random weights: about 138 KB (real attention, with
    # many weights that round to 0, takes less); weights in thousandths and compact JSON keep it there
    assert size < 300_000, size


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("examples, error, message", [
    ("abc", TypeError, "examples must be a list of dicts"),
    ({"source": []}, TypeError, "examples must be a list of dicts"),
    ([], ValueError, "examples is empty"),
    ([1], TypeError, r"examples\[0\] must be a dict"),
    ([{"source": ["a"], "target": ["b"]}], ValueError, r"examples\[0\] lacks 'weights'"),
    ([{"source": "a b", "target": ["b"], "weights": [[[[1.0]]]]}], TypeError,
     r"examples\[0\]\['source'\] must be a list of token strings"),
    ([{"source": ["a", 3], "target": ["b"], "weights": [[[[1.0]]]]}], TypeError, r"\['source'\]\[1\] must be a str"),
    ([{"source": [], "target": ["b"], "weights": [[[[1.0]]]]}], ValueError, r"\['source'\] is empty"),
    ([{"source": ["a"], "target": ["b"], "weights": "w"}], TypeError, "must be a tensor, an array or a nested list"),
    ([{"source": ["a"], "target": ["b"], "weights": [[1.0]]}], ValueError, r"shape \(1, 1\) \(2 dims\)"),
    ([{"source": ["a"], "target": ["b"], "weights": [[[[1.0]], [[0.5, 0.5]]]]}], ValueError, "rectangular"),
    ([{"source": ["a"], "target": ["b"], "weights": [[[[np.nan]]]]}], ValueError, "NaN"),
    ([{"source": ["a"], "target": ["b"], "weights": [[[[1.5]]]]}], ValueError, r"in \[0, 1\]"),
    ([{"source": ["a", "b"], "target": ["c"], "weights": [[[[0.5, 0.3]]]]}], ValueError,
     r"must sum to 1; layer 0, head 0, row 0 sums to 0\.8$"),
    ([{"source": ["a", "b"], "target": ["c", "d"], "weights": [[[[0.9, 0.7], [0.1, 0.3]]]]}],
     ValueError, r"row 0 sums to 1\.6 \(with as many target as source tokens, transposed"),
    ([{"source": ["a", "b"], "target": ["c"], "weights": [[[[0.0, 0.0]]]]}], ValueError,
     "sums to 0"),
    ([{"source": ["a"], "target": ["b"], "weights": np.array([[[["x"]]]])}], TypeError, "must hold numbers"),
    ([{"source": ["a"], "target": ["b"], "weights": np.zeros((0, 1, 1, 1))}], ValueError, "no layer or no head"),
    ([{"source": ["a"], "target": ["b"], "weights": [[[[1.0]]]], "label": 3}], TypeError, "label'\\] must be a str"),
])
def test_bad_examples(examples, error, message):
    with pytest.raises(error, match=message):
        attention_explorer_html(examples)


def test_shape_mismatch_names_the_sentence_and_shapes():
    ex = _examples(n=3, t=5, s=6)
    ex[2]["weights"] = _weights(2, 4, 5, 7)
    with pytest.raises(ValueError, match=r"examples\[2\]: weights of shape \(2, 4, 5, 7\) do not match its 5 target "
                                         r"and 6 source tokens: expected \(layers, heads, 5, 6\)"):
        attention_explorer_html(ex)
    ex = _examples(n=3)
    ex[1]["weights"] = _weights(1, 4, 5, 6)
    with pytest.raises(ValueError, match=r"examples\[1\]: weights have 1 layers × 4 heads, but examples\[0\] "
                                         r"has 2 × 4"):
        attention_explorer_html(ex)
    with pytest.raises(TypeError, match="title must be a str"):
        attention_explorer_html(_examples(), title=None)


# ---------------------------------------------------------------- the standalone page


def test_save_explorer(tmp_path):
    path = save_explorer(tmp_path / "x.html", _examples(), title="Page <1>")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "<title>Page &lt;1&gt;</title>" in text
    assert attention_explorer_html(_examples(), title="Page <1>") in text
    assert 'name="viewport"' in text  # phones get the page at their own width
    with pytest.raises(TypeError, match="path must be a str or a Path"):
        save_explorer(3, _examples())


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs headless Chromium")
def test_page_runs_in_chromium_without_console_errors(tmp_path):
    ex = _examples(n=2)
    ex[0]["source"][0] = "</script><b>x</b>"
    path = save_explorer(tmp_path / "x.html", ex)
    proc = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--enable-logging=stderr", "--v=0", "--dump-dom", f"file://{path}#mfx-sentence=1&mfx-head=2&mfx-hover=1"],
        capture_output=True, text=True, timeout=120)
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    dom = proc.stdout
    assert 'data-mfx-ready="1"' in dom  # the script ran
    assert dom.count('<option value="') == 2 + 2 + 5  # sentences, layers, average + 4 heads
    assert "mfx-tok mfx-on" in dom  # the hash hook pinned target token 1
    assert "&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;" in dom and "<b>x</b>" not in dom


# ---------------------------------------------------------------- from a translator


@pytest.fixture(scope="module")
def translator():
    tok = BPETokenizer.train(["Where is the station?", "¿Dónde está la estación?"] * 3, 280)
    torch.manual_seed(0)
    config = TransformerConfig(vocab_size=tok.vocab_size, d_model=16, n_heads=2, d_ff=32, n_layers=2,
                               max_len=32, pad_id=tok.pad_id, bos_id=tok.bos_id, eos_id=tok.eos_id)
    return Translator(Transformer(config).eval(), tok, max_source_tokens=20)


@pytest.mark.parametrize("beam", [1, 2])
def test_examples_from_translator(translator, beam):
    sentences = ["Where is the station?", "I am."]
    examples = examples_from_translator(translator, sentences, beam_size=beam)
    assert [e["label"] for e in examples] == sentences
    tok = translator.tokenizer
    for sentence, e in zip(sentences, examples):
        assert e["source"] == [tok.id_to_token(i) for i in tok.encode(sentence, add_eos=True)]
        assert e["weights"].shape == (2, 2, len(e["target"]), len(e["source"]))
        torch.testing.assert_close(e["weights"].sum(-1), torch.ones(e["weights"].shape[:3]))
        assert len(e["target"]) >= 1 and (e["target"][-1] == "<eos>" or "<eos>" not in e["target"])
    alone = [translator.translate([s], beam_size=beam)[0] for s in sentences]  # the same output length limit
    assert [tok.decode([tok.token_to_id(t) for t in e["target"]], skip_special=True).strip() for e in examples] == alone
    assert "mfx" in attention_explorer_html(examples)
    with pytest.raises(ValueError, match="sentence 2 is empty"):
        examples_from_translator(translator, ["Hi.", " "])
    assert not translator.model.training
