"""The tiny profile's tokenizer: byte-level BPE trained on CPU in seconds, Qwen2.5 special tokens.

The corpus is the running interpreter's standard library (capped), the warm-up families and the
tool protocol text. The benchmark repositories (`data/repofix/`) are never read: a tokenizer
fitted to them would leak the held-out code into the vocabulary.

Training is deterministic: BPE training counts words and repeatedly merges the most frequent
pair (ties broken by the pair itself), so the same files give a byte-identical `save_pretrained`
folder (tests/test_policy_tokenizer.py checks it). Checked with tokenizers 0.23: the result is
the same with parallelism on or off and with the files in any order, so `model.tiny.seed` does
not change the tokenizer. The files are still fed in sorted order, and training runs with
`TOKENIZERS_PARALLELISM=false` (no slower at this size): a process that used the tokenizers
thread pool and then forks (the sandbox's fork server does) gets warnings and loses it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sysconfig
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from pappo.config.policy import TinyModelParams
from pappo.env.protocol import format_tool_call, system_prompt, tool_names, tools_for
from pappo.io import PappoError
from pappo.policy.chat import ENDOFTEXT, IM_END, IM_START, QWEN25_CHAT_TEMPLATE
from pappo.tasks.families import list_families, load_tree

# ids 0.. in this order; the strings are Qwen2.5's, so one chat template and codec serve both.
TOOL_TAGS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")
SPECIAL_TOKENS: tuple[str, ...] = (ENDOFTEXT, IM_START, IM_END, *TOOL_TAGS)

DEFAULT_MAX_BYTES = 6_000_000  # stdlib share of the corpus: ~2 s to read and train at vocab 4096
MODEL_MAX_LENGTH = 32768  # Qwen2.5's; build_tokenizer sets the tiny model's own
# stdlib folders left out: tests (huge, odd encodings), GUI and legacy code, vendored wheels.
_SKIPPED_DIRS = {"site-packages", "test", "tests", "idlelib", "tkinter", "lib2to3", "turtledemo", "ensurepip"}

# One example call per tool, so the protocol's JSON shapes are common words in the corpus.
_EXAMPLE_ARGS: dict[str, dict[str, Any]] = {
    "view": {"path": "pkg/core.py", "start": 1, "end": 40},
    "search": {"pattern": "def total"},
    "str_replace": {"path": "pkg/core.py", "old_str": "return a - b\n", "new_str": "return a + b\n"},
    "run_tests": {},
    "submit": {},
    "apply": {"id": 3},
    "revert": {},
}
_EXAMPLE_ARGS_CANDIDATES = {**_EXAMPLE_ARGS, "view": {"id": 3}}


def stdlib_files(max_bytes: int = DEFAULT_MAX_BYTES) -> list[tuple[str, bytes]]:
    """The stdlib's .py files in sorted order, as many as fit in `max_bytes` (never split)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    out: list[tuple[str, bytes]] = []
    total = 0
    for path in sorted(root.rglob("*.py"), key=lambda p: p.relative_to(root).as_posix()):
        rel = path.relative_to(root)
        if any(part in _SKIPPED_DIRS for part in rel.parts[:-1]) or not path.is_file():
            continue
        data = path.read_bytes()
        if total + len(data) > max_bytes:
            continue  # a smaller file further on may still fit
        out.append((f"stdlib/{rel.as_posix()}", data))
        total += len(data)
    return out


def warmup_files(warmup_repos: Path) -> list[tuple[str, bytes]]:
    """Every file of every warm-up family, labelled warmup/<family>/<path>."""
    warmup_repos = Path(warmup_repos)
    if "repofix" in warmup_repos.parts:
        raise PappoError(
            f"{warmup_repos}: the tokenizer corpus must not include the benchmark "
            "repositories; pass tasks.warmup.repos"
        )
    return [
        (f"warmup/{family}/{path}", data)
        for family in list_families(warmup_repos)
        for path, data in load_tree(warmup_repos / family).items()
    ]


def protocol_files() -> list[tuple[str, bytes]]:
    """Per action mode: the system prompt, the tool schemas as the template prints them, one call per tool."""
    files = []
    for mode, args in (("free", _EXAMPLE_ARGS), ("candidates", _EXAMPLE_ARGS_CANDIDATES)):
        tag = "protocol" if mode == "free" else f"protocol/{mode}"
        files += [
            (f"{tag}/system", system_prompt(mode).encode()),
            (f"{tag}/tools", json.dumps(tools_for(mode)).encode()),
        ]
        for name in tool_names(mode):
            call = format_tool_call(name, args[name], f"I call {name} next.", mode=mode)
            files.append((f"{tag}/call/{name}", call.encode()))
    return files


def corpus_files(warmup_repos: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> list[tuple[str, bytes]]:
    """The whole corpus as (label, bytes), sorted by label."""
    return sorted([*stdlib_files(max_bytes), *warmup_files(warmup_repos), *protocol_files()])


def corpus_record(files: Sequence[tuple[str, bytes]]) -> dict[str, Any]:
    """Count, size and one sha256 over the sorted (label, sha256(bytes)) pairs of the corpus."""
    h = hashlib.sha256()
    for label, data in sorted(files):
        h.update(f"{label}\0{hashlib.sha256(data).hexdigest()}\n".encode())
    return {"n_files": len(files), "n_bytes": sum(len(d) for _, d in files), "sha256": h.hexdigest()}


@contextmanager
def _serial_tokenizers() -> Iterator[None]:
    old = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TOKENIZERS_PARALLELISM", None)
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = old


def _texts(files: Sequence[tuple[str, bytes]]) -> Iterator[str]:
    for _, data in sorted(files):
        yield data.decode("utf-8", errors="replace")  # a stray latin-1 byte must not stop training


def train_tokenizer(files: Sequence[tuple[str, bytes]], vocab_size: int) -> PreTrainedTokenizerFast:
    """Byte-level BPE with the special tokens at ids 0..6, pad <|endoftext|>, eos <|im_end|>."""
    floor = len(SPECIAL_TOKENS) + len(pre_tokenizers.ByteLevel.alphabet())
    if vocab_size <= floor:
        raise PappoError(
            f"model.tiny.vocab_size {vocab_size} leaves no room for merges: it must exceed "
            f"{floor} (special tokens + 256 byte symbols)"
        )
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte encodable, whatever the corpus
        show_progress=False,
    )
    with _serial_tokenizers():
        tok.train_from_iterator(_texts(files), trainer=trainer, length=len(files))
    return _wrap(_unspecial_tool_tags(tok))


def _unspecial_tool_tags(tok: Tokenizer) -> Tokenizer:
    """As in Qwen2.5, the tool tags are added tokens but not "special", so decoding with
    skip_special_tokens=True keeps a tool call readable. The trainer reserved them as special
    (that gives them ids 3..6 and keeps them out of merges); the flag is flipped in the
    serialised form because `add_tokens` on a live tokenizer leaves its special set stale."""
    state = json.loads(tok.to_str())
    for entry in state["added_tokens"]:
        entry["special"] = entry["content"] not in TOOL_TAGS
    return Tokenizer.from_str(json.dumps(state))


def _wrap(tok: Tokenizer) -> PreTrainedTokenizerFast:
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=None,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        unk_token=None,
        clean_up_tokenization_spaces=False,  # decode must give back the text byte for byte
        model_max_length=MODEL_MAX_LENGTH,
        chat_template=QWEN25_CHAT_TEMPLATE,
    )
    fast.add_special_tokens({"additional_special_tokens": [IM_START, IM_END]})
    return fast


def build_tokenizer(
    params: TinyModelParams, warmup_repos: Path, out_dir: Path, max_bytes: int = DEFAULT_MAX_BYTES
) -> dict[str, Any]:
    """Train on the corpus, save_pretrained to `out_dir`; returns the corpus record + vocab size."""
    files = corpus_files(warmup_repos, max_bytes)
    tok = train_tokenizer(files, params.vocab_size)
    tok.model_max_length = params.max_position_embeddings  # the tiny model's context, not Qwen's
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(out_dir)
    return {**corpus_record(files), "max_bytes": max_bytes, "vocab_size": len(tok)}
