"""Checkpoints: tiny build/save/load round trip, and a hub snapshot laid out exactly as the hub
cache does it (blobs by etag, snapshot links, refs), loaded through transformers' hub code path."""

from __future__ import annotations

import json
import os
import shutil
import socket
import traceback
from pathlib import Path

import jsonschema
import pytest
import torch
from huggingface_hub import scan_cache_dir
from huggingface_hub.utils.sha import git_hash
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from conftest import ROOT
from pappo.config.policy import ModelParams, TinyModelParams
from pappo.io import PappoError, sha256_bytes, sha256_file
from pappo.policy.attention import ATTN_IMPLEMENTATION
from pappo.policy.checkpoint import (
    RECORD_NAME,
    TINY_MODEL_ID,
    CheckpointRecord,
    build_tiny_model,
    content_revision,
    read_record,
    resolve_hub,
    save_checkpoint,
    verify_against,
)
from pappo.policy.loading import load_checkpoint

HUB_ID = "pappo-test/tiny-qwen2"
REV = "0123456789abcdef0123456789abcdef01234567"
TINY = TinyModelParams(
    vocab_size=512,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
    seed=3,
)
CORPUS = [
    "def add(a, b):\n    return a + b\n",
    "import os\nprint(os.getcwd())\n",
    "hello world, hello tests\n",
]


def make_tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<|endoftext|>"],
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS * 4, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>")


def lay_out_hub_cache(src: Path, cache: Path, repo_id: str, rev: str) -> Path:
    """The hub cache layout (huggingface.co/docs/hub/local-cache): blobs named by etag
    (sha256 for LFS weights, git blob sha1 otherwise), relative snapshot links, refs/main."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    (repo / "blobs").mkdir(parents=True)
    (repo / "snapshots" / rev).mkdir(parents=True)
    (repo / "refs").mkdir()
    for path in sorted(src.iterdir()):
        if path.name == RECORD_NAME:
            continue  # not a hub file
        data = path.read_bytes()
        etag = sha256_bytes(data) if path.suffix == ".safetensors" else git_hash(data)
        (repo / "blobs" / etag).write_bytes(data)
        (repo / "snapshots" / rev / path.name).symlink_to(f"../../blobs/{etag}")
    (repo / "refs" / "main").write_text(rev)
    return repo


def hub_params(cache: Path, **kw: object) -> ModelParams:
    return ModelParams.model_validate(
        {"profile": "hub", "id": HUB_ID, "revision": REV, "cache_dir": str(cache)} | kw
    )


def logits(model, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(ids).logits


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """(model, tokenizer, record, folder) of one saved tiny checkpoint; read-only for tests."""
    tokenizer = make_tokenizer()
    model = build_tiny_model(TINY, tokenizer)
    folder = tmp_path_factory.mktemp("tiny") / "ckpt"
    record = save_checkpoint(model, tokenizer, folder, "tiny", TINY_MODEL_ID)
    return model, tokenizer, record, folder


@pytest.fixture
def hub(saved, tmp_path, monkeypatch):
    """A hub cache in tmp_path holding the saved checkpoint at REV; returns the repo folder.

    Host lookups fail and are recorded: loading a cached checkpoint must not ask the hub for
    files. One lookup is tolerated: huggingface_hub's best-effort agent-detection telemetry
    (utils/_detect_agent.py), fetched once per process even with local_files_only.
    """
    lookups: list[str] = []

    def no_network(host, *args, **kwargs):
        if not any(frame.filename.endswith("_detect_agent.py") for frame in traceback.extract_stack()):
            lookups.append(str(host))
        raise OSError(f"network access in a local_files_only test: {host}")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    yield lay_out_hub_cache(saved[3], tmp_path / "hub", HUB_ID, REV)
    assert lookups == [], "the hub path asked the network for files although local_files_only is set"


IDS = torch.tensor([[5, 17, 42, 99, 3, 250, 7, 1]])


def test_saved_record_lists_every_file_with_its_sha256(saved):
    model, tokenizer, record, folder = saved
    on_disk = {p.name for p in folder.iterdir()} - {RECORD_NAME}
    assert {"model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json"} <= on_disk
    assert set(record.files) == on_disk
    assert all(record.files[n] == sha256_file(folder / n) for n in on_disk)
    assert record.revision == content_revision(record.files) and record.pinned
    assert (record.architecture, record.dtype, record.model_id) == ("qwen2", "float32", TINY_MODEL_ID)
    assert record.n_parameters == model.num_parameters() == sum(p.numel() for p in model.parameters())
    written = json.loads((folder / RECORD_NAME).read_text())
    assert CheckpointRecord.model_validate(written) == record
    jsonschema.validate(written, json.loads((ROOT / "schemas" / "checkpoint.schema.json").read_text()))
    config = json.loads((folder / "config.json").read_text())
    assert config["tie_word_embeddings"] is True and config["vocab_size"] == len(tokenizer)
    assert config["eos_token_id"] == config["pad_token_id"] == tokenizer.eos_token_id


def test_tiny_build_is_deterministic(saved, tmp_path):
    tokenizer = make_tokenizer()
    again = save_checkpoint(
        build_tiny_model(TINY, tokenizer), tokenizer, tmp_path / "a", "tiny", TINY_MODEL_ID
    )
    assert again.files == saved[2].files and again.revision == saved[2].revision
    other = build_tiny_model(TINY.model_copy(update={"seed": 4}), tokenizer)
    assert not torch.equal(other.model.embed_tokens.weight, saved[0].model.embed_tokens.weight)


def test_tiny_round_trip_gives_identical_logits(saved):
    model, _, record, folder = saved
    params = ModelParams(tiny=TINY)
    loaded, tokenizer, got = load_checkpoint(params, folder)
    assert torch.equal(logits(loaded, IDS), logits(model, IDS))
    assert got == record and loaded.config._attn_implementation == ATTN_IMPLEMENTATION
    assert tokenizer("def add").input_ids == saved[1]("def add").input_ids


def test_tiny_changed_weight_is_refused_naming_the_file(saved, tmp_path):
    folder = tmp_path / "ckpt"
    shutil.copytree(saved[3], folder)
    data = bytearray((folder / "model.safetensors").read_bytes())
    data[-1] ^= 0xFF  # last byte of the last tensor: the file still parses
    (folder / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(PappoError, match=r"changed: model\.safetensors") as e:
        load_checkpoint(ModelParams(tiny=TINY), folder)
    assert str(folder) in str(e.value)
    (folder / "notes.txt").write_text("x")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(PappoError, match=r"missing: tokenizer\.json; extra: notes\.txt"):
        verify_against(saved[2], folder)


def test_tiny_needs_matching_params_and_a_record(saved, tmp_path):
    with pytest.raises(PappoError, match=r"hidden_size: checkpoint 32 vs params 64"):
        load_checkpoint(ModelParams(tiny=TINY.model_copy(update={"hidden_size": 64})), saved[3])
    with pytest.raises(PappoError, match=RECORD_NAME):
        load_checkpoint(ModelParams(tiny=TINY), tmp_path)
    with pytest.raises(PappoError, match="not empty"):
        save_checkpoint(saved[0], saved[1], saved[3], "tiny", TINY_MODEL_ID)
    folder = tmp_path / "edited"
    shutil.copytree(saved[3], folder)
    raw = json.loads((folder / RECORD_NAME).read_text())
    raw["files"]["model.safetensors"] = "0" * 64  # hides a weight swap only if the revision is kept
    (folder / RECORD_NAME).write_text(json.dumps(raw))
    with pytest.raises(PappoError, match=r"revision does not match its own `files` listing"):
        load_checkpoint(ModelParams(tiny=TINY), folder)


def test_test_layout_is_a_hub_cache_huggingface_hub_recognises(hub):
    info = scan_cache_dir(hub.parent)
    (repo,) = info.repos
    assert repo.repo_id == HUB_ID and {r.commit_hash for r in repo.revisions} == {REV}
    assert {r.refs for r in repo.revisions} == {frozenset({"main"})}
    assert not info.warnings


def test_pinned_hub_snapshot_loads_through_transformers(saved, hub):
    model, tokenizer, saved_record, _ = saved
    snapshot, record = resolve_hub(hub_params(hub.parent))
    assert snapshot == hub / "snapshots" / REV
    loaded, hub_tok, got = load_checkpoint(hub_params(hub.parent))
    assert got == record
    assert (got.profile, got.model_id, got.revision, got.pinned, got.ref) == ("hub", HUB_ID, REV, True, None)
    assert got.files == saved_record.files  # sha256 of the content, whatever the blob is named by
    assert got.n_parameters == model.num_parameters()
    assert (
        loaded.config._attn_implementation == ATTN_IMPLEMENTATION
    )  # same path as the tiny model: same logits
    assert torch.equal(logits(loaded, IDS), logits(model, IDS))
    assert hub_tok("hello world").input_ids == tokenizer("hello world").input_ids


def test_hub_snapshot_must_match_the_record_a_stage_wrote(hub, tmp_path):
    _, record = resolve_hub(hub_params(hub.parent))
    stage_out = tmp_path / "base"
    stage_out.mkdir()
    (stage_out / RECORD_NAME).write_text(record.model_dump_json())
    assert load_checkpoint(hub_params(hub.parent), stage_out)[2] == record
    model, _, as_bf16 = load_checkpoint(hub_params(hub.parent, dtype="bfloat16"), stage_out)
    assert model.dtype == torch.bfloat16 and as_bf16 == record.model_copy(update={"dtype": "bfloat16"})
    edited = record.model_copy(update={"files": record.files | {"config.json": "0" * 64}})
    with pytest.raises(PappoError, match=r"changed: config\.json"):
        load_checkpoint(hub_params(hub.parent), expect=edited)
    other = record.model_copy(update={"revision": "e" * 40})
    with pytest.raises(PappoError, match=rf"{HUB_ID}@{REV} is not the recorded {HUB_ID}@e{{40}}"):
        load_checkpoint(hub_params(hub.parent), expect=other)


def test_unpinned_revision_needs_allow_unpinned(hub):
    with pytest.raises(ValueError, match="40-hex commit"):
        hub_params(hub.parent, revision="main")  # the config refuses at load ...
    built = ModelParams.model_construct(profile="hub", id=HUB_ID, revision="main", cache_dir=hub.parent)
    for call in (resolve_hub, load_checkpoint):  # ... and so does the loader, for params built in code
        with pytest.raises(PappoError, match=r"'main' is not a 40-hex commit: pin .*allow_unpinned"):
            call(built)
    _, _, record = load_checkpoint(hub_params(hub.parent, revision="main", allow_unpinned=True))
    assert (record.revision, record.pinned, record.ref) == (REV, False, "main")
    with pytest.raises(PappoError, match=r"refs/v9.*hf download pappo-test/tiny-qwen2 --revision v9"):
        resolve_hub(hub_params(hub.parent, revision="v9", allow_unpinned=True))


def test_modified_weight_blob_is_refused_naming_the_file(hub):
    (link,) = (hub / "snapshots" / REV).glob("*.safetensors")
    blob = link.resolve()
    os.chmod(blob, 0o644)
    blob.write_bytes(blob.read_bytes()[:-4] + b"\0\0\0\0")
    with pytest.raises(
        PappoError,
        match=rf"model\.safetensors: content sha256 [0-9a-f]{{64}} does not match "
        rf"its hub address blobs/{blob.name}.*corrupt",
    ):
        load_checkpoint(hub_params(hub.parent))


def test_modified_git_file_is_refused_by_its_sha1(hub):
    blob = (hub / "snapshots" / REV / "config.json").resolve()
    blob.write_text(blob.read_text().replace('"qwen2"', '"llama"'))
    with pytest.raises(PappoError, match=rf"config\.json: content git blob sha1 .* blobs/{blob.name}"):
        resolve_hub(hub_params(hub.parent))


def test_copied_snapshot_file_cannot_be_verified(hub):
    link = hub / "snapshots" / REV / "tokenizer.json"
    data = link.read_bytes()
    link.unlink()
    link.write_bytes(data)
    with pytest.raises(PappoError, match=r"tokenizer\.json: not a link into"):
        resolve_hub(hub_params(hub.parent))


def test_missing_snapshot_names_the_path_and_how_to_fetch(hub):
    other = "f" * 40
    with pytest.raises(PappoError) as e:
        load_checkpoint(hub_params(hub.parent, revision=other))
    message = str(e.value)
    assert str(hub / "snapshots" / other) in message
    assert f"hf download {HUB_ID} --revision {other} --cache-dir {hub.parent}" in message


def test_a_missing_or_non_utf8_record_is_named_with_the_fix(tmp_path: Path):
    with pytest.raises(PappoError, match=r"is not a saved checkpoint; build it with `pappo base-model`"):
        read_record(tmp_path)
    (tmp_path / RECORD_NAME).write_bytes(b'{"model_id": "\xff\xfe"}')
    with pytest.raises(
        PappoError, match="(?s)is not a valid checkpoint record: .*invalid unicode.*rebuild the checkpoint"
    ):
        read_record(tmp_path)
