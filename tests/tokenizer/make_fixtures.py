"""Trains small tokenizers of every kind the engine reads, with the `tokenizers` and `sentencepiece`
packages, and writes what those libraries make of a test corpus: the C++ tokenizer tests
(tests/tokenizer/tokenizer_test.cpp) must produce the same ids and text.

    python3 tests/tokenizer/make_fixtures.py OUT_DIR

Kinds: byte-level BPE as Llama 3 ships it (its split pattern, ignore_merges, BOS template) and as
Qwen2 ships it (NFC, its pattern, no BOS); BPE with byte fallback as Llama 2 ships it (Prepend +
Replace normalizers, BOS), as Gemma ships it (Replace only, added turn tokens) and with a Metaspace
pre-tokenizer (prepend_scheme first); Digits (one by one and in runs) before ByteLevel, as StarCoder
and Command-R ship it; a SentencePiece BPE model with byte fallback. Inputs cover
Unicode, whitespace runs, digits, emoji, added tokens inside text and invalid UTF-8 (given to the
reference as Python's decode(errors="replace") of the bytes). Writes OUT_DIR/manifest.json.
"""
import json
import os
import sys

try:
    import sentencepiece as spm
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
except ImportError as e:  # the test needs them: say which and how to get them
    sys.exit(f"make_fixtures.py: {e}; install the Python packages with: python3 -m pip install tokenizers sentencepiece")

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
          r"\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
         r"\s+(?!\S)|\s+")

TRAIN = [
    "The quick brown fox jumps over the lazy dog. It's 2024; we're here, they'll see.",
    "Tokenizers split text into pieces: words, sub-words and bytes.",
    "naïve café résumé — Ünïcödé ÅÄÖ ß ½ “quotes” ‘single’ …",
    "日本語のテキストと中文文本，한국어 텍스트。Ελληνικά русский текст עברית العربية",
    "emoji 😀🎉👍🏽 👨‍👩‍👧 ❤️ flags 🇩🇪🇯🇵",
    "def f(x):\n    return x ** 2  # square\n\nfor i in range(10):\n\tprint(i)",
    "numbers 0 7 42 123 4567 89012 3.14159 1,000,000 -273.15 1e-9",
    "  leading spaces, trailing spaces   \n\n\nmultiple newlines\r\n and tabs\t\tend",
] * 40

NUMERALS = "numerals: ½ ² ① Ⅻ ０ ٣ ५ 𝟘 x²+y³=z⁴ 12½ Ⅻ時 ٣٤٥ १२३ ⑳⑴ 𝟙𝟚𝟛 ¾kg"
CASES = [
    "Hello world!",
    "The year 2024 had 366 days; 1234567890 is ten digits.",
    "  two leading spaces and   three inner ones   ",
    "tabs\tand\nnewlines\n\n\r\nmixed \u00a0no-break\u2003em-space",
    "naïve café — ÅÄÖ ß ﬁ ½ and combining: e\u0301 a\u0308",
    "日本語のテキスト 中文 한국어 Ελληνικά русский עברית العربية",
    "emoji: 😀🎉👍🏽 family 👨‍👩‍👧 flag 🇯🇵 heart ❤️",
    "def f(x):\n    return x**2  # comment",
    "unseen words: xylophone quizzical zephyr, Zürich, Kraków",
    "a--b---c 12 3x4, y;z... w - - v  -- 7-8",
    "it's they're we've I'm you'll he'd IT'S",
    "",
    " ",
    "\n",
    "a",
    "😀",
    NUMERALS,
]
BAD_BYTES = [b"caf\xc3", b"bad \xff\xfe bytes", b"\xe2\x82 truncated euro", b"\xf0\x9f\x98 half emoji \xf0\x9f\x98\x80",
             b"overlong \xc0\xaf and surrogate \xed\xa0\x80 end"]


EXTRA_ADDED = ["say World now", "WorldWorld World.", "hi\u3000<mask>\u3000there", "hi <mask> there", "<mask>",
               " \t<mask>\n "]
LONG = "".join(TRAIN[:8]) * 40  # about 20 KB: one BPE word where nothing splits it


def hf_case_texts(special, added=False):
    texts = [(c.encode(), c) for c in CASES + [LONG]]
    texts += [(b, b.decode("utf-8", errors="replace")) for b in BAD_BYTES]
    for s in special:
        t = f"before {s} after{s}{s}x"
        texts.append((t.encode(), t))
    if added:
        texts += [(t.encode(), t) for t in EXTRA_ADDED]
    return texts


def add_extra_tokens(t):
    """A normalized added token and a special one that strips Unicode white space around it."""
    t.add_tokens([AddedToken("World", normalized=True)])
    t.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=True)])


def bpe_trainer(vocab, special, byte_level):
    kw = dict(vocab_size=vocab, special_tokens=special, min_frequency=2)
    if byte_level:
        kw["initial_alphabet"] = pre_tokenizers.ByteLevel.alphabet()
    return trainers.BpeTrainer(**kw)


def byte_fallback_specials():
    return ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]


def make_llama3():
    t = Tokenizer(models.BPE(ignore_merges=True))
    t.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False),
                                               pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    t.decoder = decoders.ByteLevel()
    special = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    t.train_from_iterator(TRAIN, bpe_trainer(1200, special, True))
    bos = t.token_to_id("<|begin_of_text|>")
    t.post_processor = processors.Sequence([processors.ByteLevel(trim_offsets=False),
                                            processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                                                          special_tokens=[("<|begin_of_text|>", bos)])])
    return t, special


def make_qwen2():
    t = Tokenizer(models.BPE())
    t.normalizer = normalizers.NFC()
    t.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(QWEN2), behavior="isolated", invert=False),
                                               pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    t.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    t.train_from_iterator(TRAIN, bpe_trainer(1200, special, True))
    return t, special


def make_llama2():
    t = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    t.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    t.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                   decoders.Strip(" ", 1, 0)])
    t.train_from_iterator(TRAIN, bpe_trainer(900, byte_fallback_specials(), False))
    t.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", t.token_to_id("<s>"))])
    return t, ["<s>", "</s>"]


def make_gemma():
    t = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    t.normalizer = normalizers.Replace(" ", "▁")
    t.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    special = byte_fallback_specials() + ["<start_of_turn>", "<end_of_turn>"]
    t.train_from_iterator(TRAIN, bpe_trainer(900, special, False))
    t.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", t.token_to_id("<s>"))])
    return t, ["<start_of_turn>", "<end_of_turn>"]


def make_metaspace():
    t = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    t.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    t.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    t.train_from_iterator(TRAIN, bpe_trainer(900, byte_fallback_specials(), False))
    t.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", t.token_to_id("<s>"))])
    return t, ["<s>", "</s>"]


def make_splits():
    """Every Split behavior, inverted too, as Gemma's Split(" ", MergedWithPrevious) and others use them."""
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\s+"), behavior="merged_with_previous"),
        pre_tokenizers.Split(Regex(r"[0-9]"), behavior="merged_with_next"),
        pre_tokenizers.Split("-", behavior="contiguous"),
        pre_tokenizers.Split(Regex(r"[.,;]"), behavior="removed"),
        pre_tokenizers.Split(Regex(r"\p{L}+"), behavior="isolated", invert=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    t.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>"]
    t.train_from_iterator(TRAIN + ["a--b---c 12 3x4, y;z... w - - v"] * 20, bpe_trainer(900, special, True))
    return t, special


def make_digits(individual):
    """Digits before ByteLevel, as StarCoder and Command-R ship it: every Unicode numeric character
    (Rust's char::is_numeric: Nd, Nl, No) is split off, one by one or in runs."""
    def make():
        t = Tokenizer(models.BPE())
        # Trained without Digits, so that merges across a numeral's edges (" ½", "½²") exist and a
        # numeral left unsplit encodes differently.
        t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        t.decoder = decoders.ByteLevel()
        special = ["<|endoftext|>"]
        t.train_from_iterator(TRAIN + [NUMERALS] * 20, bpe_trainer(900, special, True))
        t.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=individual),
                                                   pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
        return t, special
    return make


def hf_fixture(out, name, make):
    t, special = make()
    add_extra_tokens(t)
    path = os.path.join(out, f"{name}.json")
    t.save(path)
    cases = []
    for raw, text in hf_case_texts(special, added=True):
        ids_sp = t.encode(text, add_special_tokens=True).ids
        ids = t.encode(text, add_special_tokens=False).ids
        cases.append(dict(input_hex=raw.hex(), ids=ids, ids_special=ids_sp,
                          decoded=t.decode(ids_sp, skip_special_tokens=False),
                          decoded_skip=t.decode(ids_sp, skip_special_tokens=True)))
    return dict(name=name, kind="tokenizer.json", file=os.path.basename(path), vocab_size=t.get_vocab_size(),
                cases=cases)


def sp_fixture(out):
    corpus = os.path.join(out, "sp_corpus.txt")
    with open(corpus, "w") as f:
        f.write("\n".join(line.replace("\n", " ") for line in TRAIN))
    prefix = os.path.join(out, "sp")
    spm.SentencePieceTrainer.train(input=corpus, model_prefix=prefix, vocab_size=600, model_type="bpe",
                                   byte_fallback=True, character_coverage=0.9995, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    cases = []
    for raw, text in hf_case_texts([]):
        ids = sp.encode(text)
        ids_sp = ([sp.bos_id()] if sp.bos_id() >= 0 else []) + ids
        cases.append(dict(input_hex=raw.hex(), ids=ids, ids_special=ids_sp, decoded=sp.decode(ids_sp),
                          decoded_skip=sp.decode(ids_sp)))
    return dict(name="sentencepiece", kind="tokenizer.model", file="sp.model", vocab_size=sp.get_piece_size(),
                cases=cases)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    fixtures = [hf_fixture(out, n, f) for n, f in [("llama3", make_llama3), ("qwen2", make_qwen2), ("llama2", make_llama2),
                                                   ("gemma", make_gemma), ("metaspace", make_metaspace),
                                                   ("splits", make_splits), ("digits", make_digits(True)),
                                                   ("digit_runs", make_digits(False))]]
    fixtures.append(sp_fixture(out))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(fixtures, f, indent=1, ensure_ascii=False)
    print(f"make_fixtures.py: {len(fixtures)} tokenizers, {sum(len(x['cases']) for x in fixtures)} cases in {out}")


if __name__ == "__main__":
    main()
