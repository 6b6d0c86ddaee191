"""The page translator's "does not look like English" warning (_static/translator/english.js)
agrees with the command line's (minformer.sentences.not_english_reason) on the same lines, and
its data file (english-data.js) is the one minformer.widget writes. Node runs the JavaScript."""

import json
import random
import shutil
import subprocess
import unicodedata

import pytest

from minformer.sentences import not_english_reason
from minformer.widget import ENGLISH_DATA, STATIC, english_data

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="Node.js is not installed")

LINES = [
    # English, and what the command line lets through
    "My brother, who lives in Madrid, is coming to visit us next month.",
    "Tom and Mary went to Boston.", "Could you tell me how to get to the nearest pharmacy?",
    "Hi.", "42", "", "   ", "I don't know what you're talking about.", "It’s Tom’s car.",
    "I love 🍕 and 🎉 so much!", "🍕🍕🍕", "🙂 🙃", "x² + y² = z²", "The CAFÉ is closed.",
    "Please call Dr. Smith at 3 p.m.", "SHE SAID NO", "straße", "Straße is a street in Berlin.",
    # not English, as the command line warns
    "Hola, ¿cómo estás?", "Je voudrais un café, s'il vous plaît.",
    "Ich habe einen Hund und eine Katze.", "Привет, как дела?", "你好，你好吗？",
    "こんにちは、元気ですか", "안녕하세요 반갑습니다", "Γειά σου κόσμε", "مرحبا بالعالم",
    "नमस्ते दुनिया", "שלום עולם", "สวัสดีชาวโลก", "Ｈｅｌｌｏ ｗｏｒｌｄ", "𝐇𝐞𝐥𝐥𝐨 𝐰𝐨𝐫𝐥𝐝",
    "asdf qwer zxcv", "lorem ipsum dolor sit amet", "Tom Mary Boston Madrid", "tom mary boston",
    "I am Иван", "Hello Привет мир", "ǅemal ǈubljana", "e\u0301te\u0301 de\u0301ja\u0300",
    "İstanbul is big", "ΣΊΣΥΦΟΣ", "ﬁnd the ﬂat", "don'’t can''t", "o'clock rock'n'roll",
    # no words, or control characters (NUL bytes): warned, blanks and numbers not
    "\x00\x00\x00", "?!?!", "...", "- - -", "Hello\x1bworld", "the cat\x7f", "\u0085", "\x0b",
    "\ufeff", "\u200b", "\u3000\u00a0", "\u2003\u2009", "\t", "the\tcat sat\r", "½ ²", "(42)",
]


def test_the_blanks_of_english_js_are_pythons():
    import re
    import sys

    text = (STATIC / "english.js").read_text(encoding="utf-8")
    listed = {int(h, 16) for h in re.findall(r"0x([0-9a-f]+)",
                                             text[text.index("PY_SPACE = ["):].split("]")[0])}
    assert listed | set(range(0x2000, 0x200B)) == {
        c for c in range(sys.maxunicode + 1) if chr(c).isspace()}


def random_lines(n=300, seed=0):
    """Lines drawn from a mix of scripts, spaces, apostrophes, digits, marks and English words."""
    rng = random.Random(seed)
    pools = ["abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "абвгдежзийклмнопрстуфхцчшщыэюяАБВ",
             "αβγδεζηθικλμνξοπρστυφχψωΣΩ", "的一是不了人我在有他这为之大来以个中上们", "ひらがなカタカナ",
             "ßæøåéèêëçñüöäÉÑ", "  ''’’-.,!?0123456789²½Ⅻ_", "\u0301\u0300\u0308", "🍕🎉🙂",
             "\x00\x1b\x7f\x85\u3000\ufeff\u2003\t\r\x0b"]
    words = ["the", "station", "train", "Tom", "house", "blue", "water", "estación", "haus", "xyz"]
    lines = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 8)):
            if rng.random() < 0.4:
                parts.append(rng.choice(words))
            else:
                pool = rng.choice(pools)
                parts.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 6))))
        lines.append(rng.choice([" ", "", "'"]).join(parts))
    return lines


def js_reasons(lines):
    script = (f"require({str(STATIC / ENGLISH_DATA)!r}); const E = require({str(STATIC / 'english.js')!r});"
              "const lines = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "process.stdout.write(JSON.stringify(lines.map(l => E.notEnglishReason(l))));")
    out = subprocess.run([NODE, "-e", script], input=json.dumps(lines), capture_output=True, text=True,
                         check=True, timeout=60)
    return json.loads(out.stdout)


def test_the_page_and_the_command_line_give_the_same_warning():
    lines = LINES + random_lines()
    want = [not_english_reason(line) for line in lines]
    got = js_reasons(lines)
    differ = [(line, w, g) for line, w, g in zip(lines, want, got, strict=True) if w != g]
    assert differ == [], differ[:5]
    # the set means something: both kinds of warning, and lines that pass, among the fixed lines
    fixed = want[:len(LINES)]
    assert sum(r is None for r in fixed) >= 15
    assert sum("script" in (r or "") for r in fixed) >= 8
    assert sum("words are not English" in (r or "") for r in fixed) >= 5


def test_the_data_file_is_the_one_minformer_writes():
    """english-data.js: rewrite it with `make export-translator`. Its Unicode tables are this
    Python's; under a Python with other tables only the word list is compared."""
    text = (STATIC / ENGLISH_DATA).read_text(encoding="ascii")
    stored = json.loads(text[text.index("= {") + 2:text.rindex(";")])
    want = english_data()
    assert stored["words"] == want["words"]
    if stored["unicode"] == unicodedata.unidata_version:
        assert stored == want
