"""Loading the configured policy checkpoint: model (eval mode), tokenizer and record, verified first.

Its bytes are checked before transformers reads them (`verify_against` for a tiny folder,
`resolve_hub` for a hub snapshot), and the loaded model is then refused if its parameter count, its
tiny shape or its files differ from its record: transformers fills missing weights with random
values and only warns, so a wrong checkpoint would otherwise train silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pappo.config.policy import ModelParams, TinyModelParams
from pappo.io import PappoError
from pappo.policy.checkpoint import (
    CheckpointRecord,
    read_record,
    refuse_diff,
    refuse_unpinned,
    resolve_hub,
    verify_against,
)

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


def load_checkpoint(
    params: ModelParams,
    folder: Path | None = None,
    *,
    expect: CheckpointRecord | None = None,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, CheckpointRecord]:
    """Model (eval mode), tokenizer and record of the configured checkpoint, verified first.

    folder: tiny: the saved checkpoint (required). hub: optional; a folder whose checkpoint.json
        (written by an earlier stage) the cached snapshot must still match.
    expect: a record written earlier (e.g. by training); refused if the checkpoint differs from it.
    """
    if params.profile == "hub":
        model, tokenizer, record = _load_hub(params)
        if folder is not None and expect is None:
            expect = read_record(Path(folder))
    elif folder is None:
        raise PappoError("model.profile is 'tiny' but no tiny checkpoint folder was given; build it first")
    else:
        model, tokenizer, record = _load_tiny(params, Path(folder))
    if model.num_parameters() != record.n_parameters:
        # transformers fills missing weights with random values and only warns.
        raise PappoError(
            f"{record.model_id}@{record.revision}: the weight files hold {record.n_parameters} parameters "
            f"but the loaded model has {model.num_parameters()}: weights are missing or unused; check "
            "that the checkpoint and the installed transformers support this architecture"
        )
    if expect is not None:
        _refuse_other(expect, record)
    return model.eval(), tokenizer, record


def _refuse_other(expect: CheckpointRecord, record: CheckpointRecord) -> None:
    loaded, recorded = f"{record.model_id}@{record.revision}", f"{expect.model_id}@{expect.revision}"
    if loaded != recorded:
        raise PappoError(
            f"loaded checkpoint {loaded} is not the recorded {recorded}: set model.id and "
            "model.revision to the recorded ones, or rerun the stages that recorded it"
        )
    refuse_diff(expect.files, record.files, loaded, expect)


def _torch_dtype(name: str) -> Any:
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def _load_hub(params: ModelParams) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, CheckpointRecord]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from pappo.policy.attention import ATTN_IMPLEMENTATION

    if params.local_files_only:
        _, record = resolve_hub(params)  # refuse a missing or corrupt snapshot before the slow load
        revision = record.revision  # load exactly the commit that was verified
    else:
        refuse_unpinned(params)  # before downloading anything
        revision = params.revision or "main"
    where = {"cache_dir": params.cache_dir, "local_files_only": params.local_files_only}
    kwargs = {"revision": revision, **where}
    # adapter_kwargs: transformers' AutoModel adapter probe (adapter_config.json) does not get
    # cache_dir or local_files_only otherwise, and asks the network (cf. transformers#29401).
    model = AutoModelForCausalLM.from_pretrained(
        params.id,
        dtype=_torch_dtype(params.dtype),
        adapter_kwargs=where,
        attn_implementation=ATTN_IMPLEMENTATION,
        **kwargs,
    )
    tokenizer = AutoTokenizer.from_pretrained(params.id, **kwargs)
    if not params.local_files_only:
        _, record = resolve_hub(params)  # files may just have been downloaded: verify what landed
    return model, tokenizer, record


def load_tokenizer(folder: Path) -> PreTrainedTokenizerBase:
    """The tiny tokenizer saved in `folder`, encoding exactly as it was trained and saved.

    Not AutoTokenizer: next to a Qwen2 config.json it builds Qwen2Tokenizer, which replaces the
    saved pre-tokenizer with Qwen's (every digit its own token), so a checkpoint loaded for RL would
    spell every number in prompts and observations unlike its pre-training and SFT data."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast.from_pretrained(folder, local_files_only=True)


def _load_tiny(
    params: ModelParams, folder: Path
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, CheckpointRecord]:
    from transformers import AutoModelForCausalLM

    from pappo.policy.attention import ATTN_IMPLEMENTATION

    record = read_record(folder)
    verify_against(record, folder)
    model = AutoModelForCausalLM.from_pretrained(
        folder,
        dtype=_torch_dtype(params.dtype),
        attn_implementation=ATTN_IMPLEMENTATION,
        local_files_only=True,
    )
    tokenizer = load_tokenizer(folder)
    _refuse_other_shape(params.tiny, model.config, folder)
    return model, tokenizer, record.model_copy(update={"dtype": params.dtype})


def _refuse_other_shape(params: TinyModelParams, config: Any, folder: Path) -> None:
    """A tiny checkpoint built from other model.tiny params is stale, not a different model to run."""
    names = (
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "max_position_embeddings",
    )
    diff = [
        f"{n}: checkpoint {getattr(config, n)} vs params {getattr(params, n)}"
        for n in names
        if getattr(config, n) != getattr(params, n)
    ]
    if diff:
        raise PappoError(
            f"{folder}: built from other model.tiny params ({'; '.join(diff)}); rebuild the tiny checkpoint"
        )
