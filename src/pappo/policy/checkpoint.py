"""Pinned policy checkpoints: the built tiny Qwen2, or a hub snapshot verified file by file.

Every file a checkpoint is made of (weights, config, tokenizer) is hashed into a
`CheckpointRecord`, so a run names exactly which bytes it used. A hub snapshot is only loaded
after each file's content matches its content address in the hub cache; a tiny checkpoint
only after its files match the `checkpoint.json` written beside them.

torch and transformers are imported inside the functions: `pappo schemas` imports this module
for `CheckpointRecord` and must not pay for them.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pappo.config.policy import ModelParams, TinyModelParams
from pappo.io import (
    CHUNK,
    PappoError,
    atomic_write_json,
    canonical_json,
    git_blob_hasher,
    sha256_bytes,
    sha256_file,
)

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase, Qwen2Config

TINY_MODEL_ID = "pappo/tiny-qwen2"
RECORD_NAME = "checkpoint.json"
_COMMIT = re.compile(r"[0-9a-f]{40}")


class CheckpointRecord(BaseModel):
    """Which policy weights a run used: identity, revision and the sha256 of every file."""

    # `model_id` would otherwise trip pydantic's reserved `model_` prefix.
    model_config = ConfigDict(extra="forbid", frozen=True, protected_namespaces=())

    profile: Literal["tiny", "hub"] = Field(description="tiny: built on CPU; hub: a hub snapshot.")
    model_id: str = Field(description=f"Hub repository id, or {TINY_MODEL_ID!r} for the tiny model.")
    revision: str = Field(
        description="Hub: the 40-hex commit of the snapshot. Saved folders (tiny): sha256 over the "
        "canonical JSON of the sorted (file name, file sha256) pairs."
    )
    pinned: bool = Field(
        True, description="False when a branch or tag was resolved (model.allow_unpinned): not publishable."
    )
    ref: str | None = Field(None, description="The branch or tag `revision` was resolved from, if unpinned.")
    files: dict[str, str] = Field(
        description="Relative posix path -> sha256 of every weight, config and tokenizer file "
        f"({RECORD_NAME} itself excluded)."
    )
    n_parameters: int = Field(ge=1, description="Distinct parameters (tied weights counted once).")
    architecture: str = Field(description="config.json model_type, e.g. 'qwen2'.")
    dtype: Literal["float32", "bfloat16", "float16"] = Field(
        description="Dtype the weights are loaded and run in."
    )


# ---------------------------------------------------------------------------------------------
# Hashing


def hash_files(folder: Path) -> dict[str, str]:
    """sha256 of every file under `folder` (links followed), by relative posix path."""
    folder = Path(folder)
    out: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_file() and rel != RECORD_NAME:
            out[rel] = sha256_file(path)
    return out


def content_revision(files: dict[str, str]) -> str:
    """Revision of a saved folder: its content, so equal files give an equal revision."""
    return sha256_bytes(canonical_json(sorted(files.items())).encode())


def verify_against(record: CheckpointRecord, path: Path) -> None:
    """Refuse if the files under `path` are not exactly the files `record` lists."""
    refuse_diff(record.files, hash_files(Path(path)), f"{path}", record)


def refuse_diff(
    expected: dict[str, str], actual: dict[str, str], where: str, record: CheckpointRecord
) -> None:
    changed = sorted(n for n in expected.keys() & actual.keys() if expected[n] != actual[n])
    missing = sorted(expected.keys() - actual.keys())
    extra = sorted(actual.keys() - expected.keys())
    if not (changed or missing or extra):
        return
    parts = [
        f"{label}: {', '.join(names)}"
        for label, names in (("changed", changed), ("missing", missing), ("extra", extra))
        if names
    ]
    raise PappoError(
        f"{where}: files do not match the checkpoint record of {record.model_id}@{record.revision} "
        f"({'; '.join(parts)}); the checkpoint was modified after it was recorded: rebuild or "
        "re-download it (or, if the change is intended, record it anew and rerun what used it)"
    )


def _count_parameters(folder: Path) -> int:
    """Parameters stored in the safetensors files, from their headers (no weights are read)."""
    from safetensors import safe_open

    total = 0
    for path in sorted(folder.rglob("*.safetensors")):
        with safe_open(str(path), framework="pt") as f:
            total += sum(math.prod(f.get_slice(name).get_shape()) for name in f.keys())
    if total == 0:
        raise PappoError(f"{folder}: no *.safetensors weights found; only safetensors checkpoints are loaded")
    return total


def _read_config(folder: Path) -> dict[str, Any]:
    path = folder / "config.json"
    if not path.is_file():
        raise PappoError(f"{path} is missing: not a transformers checkpoint folder (no config.json)")
    config: dict[str, Any] = json.loads(path.read_text())
    return config


# ---------------------------------------------------------------------------------------------
# Tiny model


def tiny_config(
    params: TinyModelParams,
    vocab_size: int,
    *,
    bos_token_id: int | None = None,
    eos_token_id: int | None = None,
    pad_token_id: int | None = None,
) -> Qwen2Config:
    """Qwen2 architecture at tiny size; rope, norm and init keep Qwen2Config's defaults.

    Embeddings are tied (as in the small Qwen2.5 models), which halves the largest matrix.
    """
    from transformers import Qwen2Config

    from pappo.policy.attention import ATTN_IMPLEMENTATION

    return Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=params.hidden_size,
        intermediate_size=params.intermediate_size,
        num_hidden_layers=params.num_hidden_layers,
        num_attention_heads=params.num_attention_heads,
        num_key_value_heads=params.num_key_value_heads,
        max_position_embeddings=params.max_position_embeddings,
        tie_word_embeddings=True,
        use_sliding_window=False,
        bos_token_id=bos_token_id,
        eos_token_id=eos_token_id,
        pad_token_id=pad_token_id,
        attn_implementation=ATTN_IMPLEMENTATION,
    )


def build_tiny_model(params: TinyModelParams, tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel:
    """A freshly initialised tiny Qwen2 sized to `tokenizer`; same params, same weights."""
    import torch
    from transformers import Qwen2ForCausalLM

    # len(): the embedding must cover added special tokens too, whatever the trained vocab reached.
    config = tiny_config(
        params,
        len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    # fork_rng: seeding must not disturb the caller's random stream.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(params.seed)
        model = Qwen2ForCausalLM(config)
    return model.eval()


def save_checkpoint(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    out_dir: Path,
    profile: Literal["tiny", "hub"],
    model_id: str,
) -> CheckpointRecord:
    """save_pretrained model and tokenizer (safetensors) into an empty `out_dir`; record every file."""
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        # Stale files would be hashed into the record as if they belonged to this model.
        raise PappoError(f"{out_dir} is not empty: delete it or save the checkpoint elsewhere")
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    files = hash_files(out_dir)
    record = CheckpointRecord(
        profile=profile,
        model_id=model_id,
        revision=content_revision(files),
        files=files,
        n_parameters=model.num_parameters(),
        architecture=model.config.model_type,
        dtype=str(model.dtype).removeprefix("torch."),
    )
    atomic_write_json(out_dir / RECORD_NAME, record.model_dump(mode="json"))
    return record


def read_record(folder: Path) -> CheckpointRecord:
    """The `checkpoint.json` in `folder` (a tiny one checked to be self-consistent)."""
    path = Path(folder) / RECORD_NAME
    if not path.is_file():
        raise PappoError(
            f"{path} is missing: {folder} is not a saved checkpoint; build it with `pappo base-model` "
            "(or `dvc repro base_model`), or pass --base with the folder of one"
        )
    try:  # bytes: pydantic reports bad UTF-8 as a validation error, read_text() would raise
        record = CheckpointRecord.model_validate_json(path.read_bytes())
    except ValidationError as e:
        raise PappoError(f"{path} is not a valid checkpoint record: {e}; rebuild the checkpoint") from e
    if record.profile == "tiny" and content_revision(record.files) != record.revision:
        raise PappoError(
            f"{path}: revision does not match its own `files` listing; the record was edited: rebuild"
        )
    return record


# ---------------------------------------------------------------------------------------------
# Hub cache


def hub_cache_root(params: ModelParams) -> Path:
    """model.cache_dir, else huggingface_hub's own default (HF_HUB_CACHE / HF_HOME aware)."""
    if params.cache_dir is not None:
        return Path(params.cache_dir)
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def _fetch_hint(params: ModelParams, revision: str) -> str:
    cache = f" --cache-dir {params.cache_dir}" if params.cache_dir is not None else ""
    return (
        f"on a machine with internet run `hf download {params.id} --revision {revision}{cache}` "
        "(`huggingface-cli download ...` before huggingface_hub 1.0) and copy the cache here"
    )


def refuse_unpinned(params: ModelParams) -> None:
    # The config refuses this at load; a ModelParams built in code must be refused too.
    if not params.allow_unpinned and not _COMMIT.fullmatch(params.revision):
        raise PappoError(
            f"model.revision {params.revision!r} is not a 40-hex commit: pin the checkpoint to the commit "
            "you ran (its hub page, 'Files and versions'), or set model.allow_unpinned for an "
            "exploratory run that cannot be published"
        )


def _resolve_commit(params: ModelParams, repo: Path) -> tuple[str, str | None]:
    """(commit, ref): ref is the branch or tag resolved through refs/, None when pinned."""
    refuse_unpinned(params)
    if _COMMIT.fullmatch(params.revision):
        return params.revision, None
    ref = params.revision or "main"  # the hub's default branch, as huggingface_hub assumes
    ref_file = repo / "refs" / ref
    if ".." in Path(ref).parts or not ref_file.is_file():
        raise PappoError(f"{ref_file}: no cached ref {ref!r} of {params.id}; {_fetch_hint(params, ref)}")
    commit = ref_file.read_text().strip()
    if not _COMMIT.fullmatch(commit):
        raise PappoError(
            f"{ref_file} holds {commit!r}, not a 40-hex commit; the cache is corrupt: re-download"
        )
    return commit, ref


def _content_address(path: Path, etag: str) -> tuple[str, str]:
    """(sha256, the hash the hub names this blob by): sha256 for LFS, git blob sha1 otherwise."""
    size = path.stat().st_size
    sha256, sha1 = hashlib.sha256(), git_blob_hasher(size)
    git = len(etag) == 40  # LFS blobs are named by 64-hex sha256 (hub local-cache spec)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            sha256.update(chunk)
            if git:
                sha1.update(chunk)
    return sha256.hexdigest(), sha1.hexdigest() if git else sha256.hexdigest()


def _verify_link(rel: str, link: Path, blobs: Path, fix: str) -> str:
    """sha256 of one snapshot file after checking it against its blob name; refuses naming `rel`."""
    if not link.is_symlink():
        raise PappoError(
            f"{rel}: not a link into {blobs}, so its content cannot be checked against the hub; "
            f"the snapshot was copied or edited by hand: delete it and re-download ({fix})"
        )
    blob = link.resolve()
    if blob.parent != blobs.resolve() or not blob.is_file():
        raise PappoError(
            f"{rel}: links to {blob}, which is not a blob of this repository; "
            f"the cache is corrupt: delete it and re-download ({fix})"
        )
    etag = blob.name
    if len(etag) not in (40, 64):
        raise PappoError(f"{rel}: blob name {etag!r} is neither a git sha1 nor a sha256; re-download ({fix})")
    sha256, address = _content_address(blob, etag)
    if address != etag:
        kind = "git blob sha1" if len(etag) == 40 else "sha256"
        raise PappoError(
            f"{rel}: content {kind} {address} does not match its hub address blobs/{etag}; "
            f"the cache is corrupt or was edited: delete and re-download ({fix})"
        )
    return sha256


def resolve_hub(params: ModelParams) -> tuple[Path, CheckpointRecord]:
    """The cached snapshot of `params.id` at `params.revision`, every file verified; nothing downloaded.

    Layout (huggingface.co/docs/hub/local-cache): <cache>/models--{org}--{name}/ holds blobs/
    named by etag, refs/<branch or tag> holding a commit, and snapshots/<commit>/<file> links
    to ../../blobs/<etag>.
    """
    repo = hub_cache_root(params) / ("models--" + params.id.replace("/", "--"))
    commit, ref = _resolve_commit(params, repo)
    snapshot = repo / "snapshots" / commit
    fix = _fetch_hint(params, commit)
    if not snapshot.is_dir():
        raise PappoError(f"{snapshot}: snapshot of {params.id} at {commit} is not in the hub cache; {fix}")
    files: dict[str, str] = {}
    for path in sorted(snapshot.rglob("*")):
        if path.is_symlink() or not path.is_dir():  # a dangling link is a file entry too: refused
            rel = path.relative_to(snapshot).as_posix()
            files[rel] = _verify_link(rel, path, repo / "blobs", fix)
    if not files:
        raise PappoError(f"{snapshot}: snapshot is empty; {fix}")
    record = CheckpointRecord(
        profile="hub",
        model_id=params.id,
        revision=commit,
        pinned=ref is None,
        ref=ref,
        files=files,
        n_parameters=_count_parameters(snapshot),
        architecture=str(_read_config(snapshot).get("model_type", "")),
        dtype=params.dtype,
    )
    return snapshot, record
