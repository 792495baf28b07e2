"""The tiny profile's tokenizer: its corpus (never the benchmark), determinism, special tokens."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import AutoTokenizer

from pappo.config.policy import ModelParams, TinyModelParams
from pappo.env.protocol import SYSTEM_PROMPT
from pappo.io import PappoError
from pappo.policy.chat import QWEN25_CHAT_TEMPLATE
from pappo.policy.checkpoint import TINY_MODEL_ID, build_tiny_model, save_checkpoint
from pappo.policy.loading import load_checkpoint
from pappo.policy.tokenizer import (
    SPECIAL_TOKENS,
    build_tokenizer,
    corpus_files,
    corpus_record,
    protocol_files,
    stdlib_files,
    train_tokenizer,
    warmup_files,
)

ROOT = Path(__file__).resolve().parents[1]
WARMUP = ROOT / "data" / "warmup" / "repos"
SMALL = 200_000  # stdlib bytes: enough for a 600-token vocabulary, trains in a fraction of a second
VOCAB = 600


@pytest.fixture(scope="module")
def files() -> list[tuple[str, bytes]]:
    return corpus_files(WARMUP, max_bytes=SMALL)


def _saved(files: list[tuple[str, bytes]], out: Path) -> dict[str, bytes]:
    train_tokenizer(files, VOCAB).save_pretrained(out)
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def test_corpus_is_sorted_labelled_and_capped(files):
    labels = [label for label, _ in files]
    assert labels == sorted(labels) and len(set(labels)) == len(labels)
    assert ("protocol/system", SYSTEM_PROMPT.encode()) in files
    assert {"protocol/tools", "protocol/call/view", "protocol/call/submit"} <= set(labels)
    families = {label.split("/")[1] for label in labels if label.startswith("warmup/")}
    assert families == {p.name for p in WARMUP.iterdir() if p.is_dir()}
    stdlib = [(label, data) for label, data in files if label.startswith("stdlib/")]
    assert stdlib and sum(len(d) for _, d in stdlib) <= SMALL
    assert corpus_files(WARMUP, max_bytes=SMALL) == files  # deterministic


def test_corpus_leaves_out_excluded_stdlib_folders_and_benchmark():
    labels = [label for label, _ in stdlib_files(max_bytes=50_000_000)]
    skipped = {"site-packages", "test", "tests", "idlelib", "tkinter", "lib2to3", "turtledemo", "ensurepip"}
    assert labels and not any(set(label.split("/")[1:-1]) & skipped for label in labels)
    assert any(label == "stdlib/json/decoder.py" for label in labels)
    with pytest.raises(PappoError, match="benchmark"):
        warmup_files(ROOT / "data" / "repofix" / "repos")


def test_protocol_text_has_one_call_per_tool():
    calls = {label: data.decode() for label, data in protocol_files() if label.startswith("protocol/call/")}
    assert len(calls) == 5
    assert all(text.rstrip().endswith("</tool_call>") for text in calls.values())


def test_corpus_record_binds_labels_and_bytes(files):
    record = corpus_record(files)
    assert record["n_files"] == len(files) and record["n_bytes"] == sum(len(d) for _, d in files)
    assert corpus_record(list(reversed(files))) == record  # order-free
    label, data = files[0]
    assert corpus_record([(label, data + b" "), *files[1:]])["sha256"] != record["sha256"]
    assert corpus_record([(label + "x", data), *files[1:]])["sha256"] != record["sha256"]


def test_training_is_byte_identical(files, tmp_path):
    first, second = _saved(files, tmp_path / "a"), _saved(files, tmp_path / "b")
    assert first == second
    assert {"tokenizer.json", "tokenizer_config.json"} <= set(first)


def test_special_tokens_ids_and_template(files, tmp_path):
    tok = train_tokenizer(files, VOCAB)
    assert len(tok) == VOCAB
    assert tok.convert_ids_to_tokens(list(range(len(SPECIAL_TOKENS)))) == list(SPECIAL_TOKENS)
    assert (tok.pad_token, tok.eos_token, tok.bos_token) == ("<|endoftext|>", "<|im_end|>", None)
    assert tok.chat_template == QWEN25_CHAT_TEMPLATE
    # As in Qwen2.5: the tool tags survive skip_special_tokens, the ChatML markers do not.
    ids = tok.encode("<|im_start|>a<tool_call>b</tool_call><|im_end|>", add_special_tokens=False)
    assert tok.decode(ids, skip_special_tokens=True) == "a<tool_call>b</tool_call>"
    tok.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    text = "def f(x):\n    return x  # é\n<tool_response>\nok\n</tool_response>"
    assert loaded.encode(text, add_special_tokens=False) == tok.encode(text, add_special_tokens=False)
    assert (loaded.pad_token_id, loaded.eos_token_id) == (0, 2)
    assert loaded.chat_template == QWEN25_CHAT_TEMPLATE


def test_vocab_too_small_is_explained(files):
    with pytest.raises(PappoError, match="vocab_size 200"):
        train_tokenizer(files, 200)


def test_build_tokenizer_saves_and_records(tmp_path):
    record = build_tokenizer(TinyModelParams(vocab_size=512), WARMUP, tmp_path / "tok", max_bytes=SMALL)
    assert record["vocab_size"] == 512 and record["max_bytes"] == SMALL
    assert record == {**corpus_record(corpus_files(WARMUP, SMALL)), "max_bytes": SMALL, "vocab_size": 512}
    loaded = AutoTokenizer.from_pretrained(tmp_path / "tok")
    assert len(loaded) == 512 and loaded.model_max_length == TinyModelParams().max_position_embeddings


def test_a_saved_checkpoint_loads_the_encoding_it_was_trained_with(files, tmp_path):
    """Next to the model's Qwen2 config.json, AutoTokenizer builds Qwen2Tokenizer and swaps in Qwen's
    pre-tokenizer (each digit its own token): RL then read every number in its prompts unlike its
    pre-training and SFT data. load_checkpoint must give back the trained encoding."""
    tiny = TinyModelParams(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=512,
    )
    tok = train_tokenizer(files, VOCAB)
    save_checkpoint(build_tiny_model(tiny, tok), tok, tmp_path / "ckpt", "tiny", TINY_MODEL_ID)
    text = "Tests: 41 passed, 2 failed (of 43 graded tests).\n[3] pkg/mod.py:128\nApplied [3]. 2024 1 10"
    trained = tok.encode(text, add_special_tokens=False)
    qwen = AutoTokenizer.from_pretrained(tmp_path / "ckpt")
    assert qwen.encode(text, add_special_tokens=False) != trained  # the hazard is real with this vocabulary
    _, loaded, _ = load_checkpoint(ModelParams(tiny=tiny), tmp_path / "ckpt")
    assert loaded.encode(text, add_special_tokens=False) == trained
    assert loaded.decode(trained) == text and loaded.chat_template == QWEN25_CHAT_TEMPLATE
