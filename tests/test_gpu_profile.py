"""The qwen2.5-coder-7b params profile: merged into params.yaml, pinned, loaded through the hub path
(a tiny random Qwen2 in the hub cache layout stands in for the 7B), gradient checkpointing exact."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
import yaml
from typer.testing import CliRunner

from conftest import ROOT
from pappo.cli import app
from pappo.config import apply_profile, load_params
from pappo.config.policy import LoraParams
from pappo.experiment.run import place
from pappo.io import PappoError
from pappo.policy.adapters import ActorCritic
from pappo.policy.loading import load_checkpoint
from pappo.rl.distributed import Dist

# `hub` and `saved` are pytest fixtures imported so that tests here request them by name; ruff reads
# that as F401 (unused import) here and F811 (a parameter redefines them) on those tests.
from test_policy_checkpoint import HUB_ID, REV, hub, saved  # noqa: F401

PROFILE = ROOT / "profiles" / "qwen2.5-coder-7b.yaml"
PARAMS = ROOT / "params.yaml"


def test_the_profile_merges_into_params_and_is_pinned():
    merged = apply_profile(PARAMS, PROFILE, REV)
    default = load_params(PARAMS)
    m = merged.model
    assert (m.profile, m.id, m.revision, m.dtype, m.device) == (
        "hub",
        "Qwen/Qwen2.5-Coder-7B-Instruct",
        REV,
        "bfloat16",
        "cuda",
    )
    assert m.gradient_checkpointing and merged.lora.dropout == 0.0
    assert set(merged.lora.target_modules) == {
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    }
    assert (
        merged.rollout.batch_size == merged.rl.tasks_per_update * merged.rl.group_size
    )  # one rollout batch per update
    # everything the profile does not name keeps params.yaml's value
    assert merged.tasks == default.tasks and merged.seeds == default.seeds and merged.claims == default.claims
    assert merged.rl.clip_ratio_high == default.rl.clip_ratio_high and merged.env == default.env


@pytest.mark.parametrize("revision", [None, "main", "v1.0", "0123abc"])
def test_an_unpinned_revision_is_refused(revision):
    with pytest.raises(PappoError, match="model.revision"):
        apply_profile(PARAMS, PROFILE, revision)


def test_gradient_checkpointing_refuses_lora_dropout(tmp_path: Path):
    overlay = yaml.safe_load(PROFILE.read_text())
    overlay["lora"]["dropout"] = 0.1
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(overlay))
    with pytest.raises(PappoError, match="lora.dropout"):
        apply_profile(PARAMS, bad, REV)


def test_pappo_profile_writes_params_yaml_or_nothing(tmp_path: Path):
    target = tmp_path / "params.yaml"
    shutil.copy(PARAMS, target)
    before = target.read_bytes()
    args = ["profile", str(PROFILE), "--params", str(target), "--revision"]
    bad = CliRunner().invoke(app, [*args, "main"])
    assert bad.exit_code == 1 and "model.revision" in bad.output
    assert target.read_bytes() == before  # nothing half-written
    ok = CliRunner().invoke(app, [*args, REV])
    assert ok.exit_code == 0, ok.output
    written = load_params(target)
    assert written == apply_profile(PARAMS, PROFILE, REV)
    # the published matrix trains the profile's rl, not the CPU tier's
    assert written.rl != load_params(PARAMS).rl


def test_the_profile_loads_a_hub_checkpoint_through_the_pinned_path(hub, tmp_path: Path):  # noqa: F811
    profile = apply_profile(PARAMS, PROFILE, REV)
    model_params = profile.model.model_copy(update={"id": HUB_ID, "cache_dir": hub.parent, "device": "cpu"})
    model, tokenizer, record = load_checkpoint(model_params)
    assert record.revision == REV and record.pinned and next(model.parameters()).dtype == torch.bfloat16
    params = profile.model_copy(update={"model": model_params})
    model = place(model, params, Dist())
    assert model.is_gradient_checkpointing and model.training  # checkpointing acts in train mode only
    ac = ActorCritic(model, params.lora)
    ids = torch.tensor([[5, 17, 42, 99, 3, 250, 7, 1]])
    (ac.values(ids, torch.ones_like(ids)) + ac.reward_values(torch.ones(ids.shape))).sum().backward()
    assert all(p.grad is not None for p in ac.critic_parameters())


def test_gradient_checkpointing_gives_the_same_gradients(saved):  # noqa: F811
    grads = []
    for checkpointing in (False, True):
        model = saved[0].__class__(saved[0].config)
        model.load_state_dict(saved[0].state_dict())
        params = apply_profile(PARAMS, PROFILE, REV)
        params = params.model_copy(
            update={
                "model": params.model.model_copy(
                    update={"device": "cpu", "gradient_checkpointing": checkpointing}
                )
            }
        )
        torch.manual_seed(0)  # the same LoRA initialisation both times
        ac = ActorCritic(place(model, params, Dist()), LoraParams(rank=4, alpha=8.0))
        for p in ac.policy_parameters():  # LoRA B starts at 0: give A's gradient something to flow through
            torch.nn.init.normal_(p, std=0.02)
        ids = torch.tensor([[5, 17, 42, 99, 3, 250, 7, 1]] * 2)
        hidden = ac.policy_hidden(ids, torch.ones_like(ids))
        ac.lm_head(hidden).logsumexp(-1).sum().backward()
        grads.append([p.grad.clone() for p in ac.policy_parameters()])
    assert len(grads[0]) > 0
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)


def test_cuda_without_a_gpu_is_refused_with_a_fix():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(PappoError, match="model.device"):
        Dist.from_env("cuda")
