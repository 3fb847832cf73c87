"""sporeling.data.text against MindSpore 2.10's outputs on 300 lines of Tiny Shakespeare
(tests/data/ms_text.json, made by make_ms_fixtures.py text), in eager calls and in a
pipeline, plus argument errors and the BPE tokenizer on `tokenizers`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import sporeling.data as ds
from sporeling.data import text

DATA = Path(__file__).parent / "data"
MS = json.loads((DATA / "ms_text.json").read_text(encoding="utf-8"))
LINES = (DATA / "tiny_shakespeare.txt").read_text(encoding="utf-8").splitlines()


def _plain(out):
    if isinstance(out, tuple):
        return [np.asarray(o).tolist() for o in out]
    return np.asarray(out).tolist()


def _check(name, op, inputs):
    want = MS[name]
    assert len(want) == len(inputs)
    for i, (x, w) in enumerate(zip(inputs, want)):
        got = _plain(op(x))
        assert got == w, (name, i, LINES[i] if i < len(LINES) else x)


def test_whitespace_unicode_regex_tokenizers():
    _check("whitespace", text.WhitespaceTokenizer(True), LINES)
    _check("unicode_char", text.UnicodeCharTokenizer(True), LINES[:40])
    regex = text.RegexTokenizer(r"\s+|[,.!?;:]", r"[,.!?;:]", with_offsets=True)
    _check("regex", regex, LINES)
    out = text.WhitespaceTokenizer(True)("hello  world é")
    assert out[0].tolist() == ["hello", "world", "é"] and out[2].dtype == np.uint32
    assert out[1].tolist() == [0, 7, 13] and out[2].tolist() == [5, 12, 15]


def test_basic_tokenizer():
    _check("basic_lower", text.BasicTokenizer(lower_case=True, with_offsets=True), LINES)
    _check("basic_keep_ws", text.BasicTokenizer(keep_whitespace=True), LINES[:60])
    # Cases checked against MindSpore 2.10 by hand (MindSpore repeats the text before a
    # [CLS] with lower_case=True: 'hello [CLS] hello [ cls ]', a bug not copied here).
    basic = text.BasicTokenizer(lower_case=True)
    assert basic("Héllo [CLS] 你好!  a\tb [unused12]").tolist() == (
        ["hello", "[CLS]", "你", "好", "!", "a", "b", "[unused12]"]
    )
    no_keep = text.BasicTokenizer(preserve_unused_token=False)
    assert no_keep("[SEP]").tolist() == ["[", "SEP", "]"]
    assert text.BasicTokenizer(keep_whitespace=True)("a  \t b").tolist() == ["a", "    ", "b"]
    assert text.BasicTokenizer()("a$b+c=d€ ½").tolist() == ["a", "$", "b", "+", "c", "=", "d€", "½"]
    empty = text.WhitespaceTokenizer(True)("   ")
    assert [e.tolist() for e in empty] == [[""], [0], [0]]
    vocab = text.Vocab.from_list(["[UNK]", "hel", "##lo", "x"])
    got = text.BertTokenizer(vocab, lower_case=True, with_offsets=True)("Héllo qq x")
    assert [g.tolist() for g in got] == [["hel", "##lo", "[UNK]", "x"], [0, 3, 6, 9], [3, 5, 8, 10]]


def test_vocab_from_dataset_and_lookup():
    def tokens():
        data = ds.TextFileDataset(str(DATA / "tiny_shakespeare.txt"), shuffle=False)
        return data.map(text.WhitespaceTokenizer(), input_columns=["text"])

    vocab = text.Vocab.from_dataset(
        tokens(), columns=["text"], top_k=150, special_tokens=["<pad>", "<unk>"]
    )
    assert vocab.vocab() == MS["vocab_top150"]
    freq = text.Vocab.from_dataset(
        tokens(), freq_range=(3, 10), special_tokens=["<unk>"], special_first=False
    )
    assert freq.vocab() == MS["vocab_freq_3_10"]
    white = text.WhitespaceTokenizer()
    lookup = text.Lookup(vocab, unknown_token="<unk>")
    _check("lookup", lambda s: lookup(white(s)), LINES)
    assert lookup(np.array(["the", "zzz"])).dtype == np.int32
    with pytest.raises(RuntimeError, match="'zzz' is not in the vocab"):
        text.Lookup(vocab)(np.array(["zzz"]))
    with pytest.raises(ValueError, match="unknown_token"):
        text.Lookup(vocab, unknown_token="<nope>")
    # in a pipeline: column of ids
    data = tokens().map(lookup, input_columns=["text"])
    first = next(data.create_dict_iterator(output_numpy=True, num_epochs=1))["text"]
    assert first.tolist() == MS["lookup"][0]


def test_vocab_from_list_file_dict(tmp_path):
    vocab = text.Vocab.from_list(["a", "b"], special_tokens=["<pad>"], special_first=False)
    assert vocab.vocab() == {"a": 0, "b": 1, "<pad>": 2}
    assert vocab.tokens_to_ids(["b", "x"]) == [1, -1] and vocab.ids_to_tokens(2) == "<pad>"
    with pytest.raises(ValueError, match="duplicate word: a"):
        text.Vocab.from_list(["a", "a"])
    path = tmp_path / "v.txt"
    path.write_text("x,1\ny,2\nz,3\n")
    got = text.Vocab.from_file(str(path), delimiter=",", vocab_size=2, special_tokens=["<unk>"])
    assert got.vocab() == {"<unk>": 0, "x": 1, "y": 2}
    assert text.Vocab.from_dict({"q": 7}).vocab() == {"q": 7}


def test_wordpiece_and_bert():
    vocab = text.Vocab.from_list(MS["wordpiece_vocab"])
    _check("bert_lower", text.BertTokenizer(vocab, lower_case=True, with_offsets=True), LINES)
    _check("bert_cased", text.BertTokenizer(vocab, unknown_token="[UNK]"), LINES[:80])
    basic = text.BasicTokenizer(lower_case=True)
    wordpiece = text.WordpieceTokenizer(vocab, max_bytes_per_token=6, with_offsets=True)
    _check("wordpiece_max6", lambda s: wordpiece(basic(s)), LINES[:80])
    keep = text.WordpieceTokenizer(vocab, unknown_token="")
    assert keep(np.array(["qqqzzz€"])).tolist() == ["qqqzzz€"]


def test_sequence_ops():
    white = text.WhitespaceTokenizer()
    toks = [white(x) for x in LINES[:50]]
    _check("ngram_2", text.Ngram(2, ("<s>", 1), ("</s>", 1), "_"), toks)
    long_enough = [(t, w) for t, w in zip(toks, MS["ngram_3_plain"]) if w is not None]
    assert all(_plain(text.Ngram(3)(t)) == w for t, w in long_enough)
    _check("ngram_14", text.Ngram([1, 4], ("_", 2), ("_", 2)), toks[:10])
    vocab = text.Vocab.from_dict(MS["vocab_top150"])
    lookup = text.Lookup(vocab, unknown_token="<unk>")
    _check("sliding_window_3", lambda t: text.SlidingWindow(3)(lookup(t)), toks)
    _check("truncate_4", text.Truncate(4), toks)
    pair = text.TruncateSequencePair(7)
    got = [_plain(pair(toks[i], toks[i + 1])) for i in range(20)]
    assert got == MS["truncate_pair_7"]
    assert (
        text.ToNumber(np.int32)(np.array(["12", "-7", "0", "2147483647", "3"])).tolist()
        == (MS["to_number_int32"])
    )
    assert text.ToNumber("float32")(np.array(["1.5", "-2e3"])).tolist() == MS["to_number_float32"]
    with pytest.raises(RuntimeError, match="out of the range"):
        text.ToNumber(np.int8)(np.array(["300"]))
    with pytest.raises(RuntimeError, match="not a valid"):
        text.ToNumber(np.int32)(np.array(["x"]))
    with pytest.raises(RuntimeError, match="not a valid"):
        text.ToNumber(np.int32)(np.array(["1_000"]))
    padded = text.PadEnd([5], pad_value="<pad>")(np.array(["a", "b"]))
    assert padded.tolist() == ["a", "b", "<pad>", "<pad>", "<pad>"]


def test_argument_errors():
    with pytest.raises(ValueError, match="'n'"):
        text.Ngram(0)
    with pytest.raises(ValueError, match="left_pad"):
        text.Ngram(2, left_pad=("x", -1))
    with pytest.raises(ValueError, match="'width'"):
        text.SlidingWindow(0)
    with pytest.raises(TypeError, match="with_offsets"):
        text.WhitespaceTokenizer(with_offsets="yes")
    with pytest.raises(ValueError, match="invalid pattern"):
        text.RegexTokenizer("(")
    with pytest.raises(TypeError, match="'vocab'"):
        text.WordpieceTokenizer({"a": 1})


def test_bpe_tokenizer_on_tokenizers():
    tokenizers = pytest.importorskip("tokenizers")
    tk = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="[UNK]"))
    tk.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=300, special_tokens=["[UNK]"])
    tk.train_from_iterator(LINES, trainer)
    bpe = text.BPETokenizer(tokenizer=tk, with_offsets=True)
    for line in LINES[:50]:
        tokens, start, end = bpe(line)
        raw = line.encode("utf-8")
        # every token is the text between its offsets; together they cover the words
        assert [raw[a:b].decode() for a, b in zip(start, end)] == tokens.tolist()
        assert "".join(tokens.tolist()) == "".join(line.split())
    batch = bpe.tokenize_batch(LINES[:50])
    assert all(_plain(b) == _plain(bpe(x)) for b, x in zip(batch, LINES[:50]))
    vocab = tk.get_vocab()
    merges = json.loads(tk.to_str())["model"]["merges"]
    again = text.BPETokenizer(vocab=vocab, merges=[tuple(m) for m in merges], unk_token="[UNK]")
    assert _plain(again(LINES[5])) == _plain(bpe(LINES[5])[0])


def test_bert_tokenize_batch_equals_the_per_line_path():
    pytest.importorskip("tokenizers")
    vocab = text.Vocab.from_list(MS["wordpiece_vocab"])
    extra = ["Héllo wörld", "[CLS] first citizen [SEP]", "a\x01b", "", "tab\tseparated"]
    for lower in (True, False):
        bert = text.BertTokenizer(vocab, lower_case=lower, with_offsets=True)
        batch = bert.tokenize_batch(LINES + extra)
        assert bert._fast is not None  # the tokenizers path was used
        for line, got in zip(LINES + extra, batch):
            assert _plain(got) == _plain(bert(line)), line
    got = text.BertTokenizer(vocab, lower_case=True, with_offsets=True).tokenize_batch(LINES)
    assert [_plain(g) for g in got] == MS["bert_lower"]
