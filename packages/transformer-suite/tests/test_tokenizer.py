import pytest

from sporeling.transformer.tokenizer import CharTokenizer, load_tokenizer, train_tokenizer

TEXT = "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n" * 20


def test_char_roundtrip_and_save(tmp_path):
    tok = CharTokenizer.train(TEXT)
    assert tok.vocab_size == len(set(TEXT))
    ids = tok.encode("hear me")
    assert tok.decode(ids) == "hear me"
    tok.save(tmp_path / "t.json")
    assert load_tokenizer(tmp_path / "t.json").encode("hear me") == ids
    with pytest.raises(ValueError, match="character 'Z' is not in the vocabulary"):
        tok.encode("Z")


def test_bpe_trained_on_corpus_roundtrips(tmp_path):
    pytest.importorskip("tokenizers")
    tok = train_tokenizer("bpe", TEXT, vocab_size=300)
    ids = tok.encode("Speak, speak.\nhear me")
    assert tok.decode(ids) == "Speak, speak.\nhear me"
    assert len(ids) < len("Speak, speak.\nhear me")  # merges learned from the corpus
    tok.save(tmp_path / "b.json")
    assert load_tokenizer(tmp_path / "b.json").encode("hear me") == tok.encode("hear me")
