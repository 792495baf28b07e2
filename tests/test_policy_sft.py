"""Warm start: demonstrations laid out as rollouts lay out episodes, masked loss, a real training step."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, Qwen2Config

from pappo.config.env import EnvParams
from pappo.config.policy import TinyModelParams
from pappo.env.agents import NoisyAgent, OracleAgent, play
from pappo.env.episode import RepairEnv
from pappo.policy import sft
from pappo.policy.chat import ChatCodec
from pappo.policy.checkpoint import build_tiny_model
from pappo.policy.tokenizer import corpus_files, train_tokenizer
from pappo.tasks.store import TaskStore
from test_env_episode import FakeGrader

ROOT = Path(__file__).resolve().parents[1]
SMALL = TinyModelParams(
    vocab_size=600,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=4096,
)


@pytest.fixture(scope="module")
def codec() -> ChatCodec:
    return ChatCodec(
        train_tokenizer(corpus_files(ROOT / "data" / "warmup" / "repos", max_bytes=200_000), 600)
    )


def episode(agent_kind: str, fx_params):
    store = TaskStore.from_params(fx_params, "repofix")
    task = store.task("tinycalc-001")
    env = RepairEnv(task, store.clean(task), store.buggy(task), EnvParams(), FakeGrader())
    agent = (
        OracleAgent(task, env.buggy_tree)
        if agent_kind == "oracle"
        else NoisyAgent(task, env.buggy_tree, seed=1, p_parse_error=0.5)
    )
    return play(env, agent)[1]


@pytest.mark.parametrize("kind", ["oracle", "noisy"])
def test_demonstration_is_laid_out_like_a_rollout(codec: ChatCodec, fx_params, kind: str):
    transcript = episode(kind, fx_params)
    ids, mask = sft.encode_episode(codec, transcript)
    assert len(ids) == len(mask)
    prompt = codec.prompt_ids(transcript[:2])
    assert ids[: len(prompt)] == prompt and set(mask[: len(prompt)]) == {0}
    # the masked runs, in order, are exactly the assistant turns (plus <|im_end|> on untagged ones)
    runs, current = [], []
    for i, m in zip(ids, mask):
        if m:
            current.append(i)
        elif current:
            runs, current = runs + [current], []
    runs += [current] if current else []
    turns = [m["content"] for m in transcript if m["role"] == "assistant"]
    assert [codec.decode(r) for r in runs] == turns
    for run in runs:
        assert run[-1] in codec.stop_ids
    # and what sits between two turns is the codec's observation of the first
    at = len(prompt)
    for k, run in enumerate(runs[:-1]):
        at += len(run)
        obs = codec.observation_ids(transcript[2 + 2 * k + 1], run[-1])
        assert ids[at : at + len(obs)] == obs
        at += len(obs)
    if kind == "noisy":
        assert any(r[-1] == codec.im_end_id for r in runs)  # an unparsable turn learns to end itself


def test_masked_loss_matches_a_naive_loop():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 7)
    ids = torch.randint(7, (2, 5))
    mask = torch.tensor([[0, 1, 1, 0, 1], [0, 0, 1, 1, 1]], dtype=torch.float32)
    total, count = 0.0, 0
    for b in range(2):
        for t in range(1, 5):
            if mask[b, t]:
                total += -torch.log_softmax(logits[b, t - 1], -1)[ids[b, t]].item()
                count += 1
    assert sft.masked_lm_loss(logits, ids, mask).item() == pytest.approx(total / count, rel=1e-6)


def test_the_training_loss_equals_the_full_logits_loss(codec: ChatCodec):
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(
        Qwen2Config(
            vocab_size=300,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=128,
        )
    )
    ids = torch.randint(1, 300, (3, 17))
    attn = torch.ones_like(ids)
    attn[2, 12:] = 0
    mask = (torch.rand(3, 17) > 0.5).float() * attn
    full = sft.masked_lm_loss(model(input_ids=ids, attention_mask=attn).logits, ids, mask)
    torch.testing.assert_close(sft.model_lm_loss(model, ids, attn, mask), full, rtol=1e-5, atol=1e-6)


def test_collate_pads_right_and_cuts():
    ids, attn, loss = sft.collate([([5, 6, 7], [0, 1, 1]), ([8], [1])], pad_id=0, max_len=2)
    assert ids.tolist() == [[5, 6], [8, 0]] and attn.tolist() == [[1, 1], [1, 0]]
    assert loss.tolist() == [[0.0, 1.0], [1.0, 0.0]]


def test_training_changes_parameters_lowers_loss_and_is_deterministic(codec: ChatCodec, fx_params):
    examples = [sft.encode_episode(codec, episode("oracle", fx_params))] * 2
    schedule = sft.Schedule(steps=12, batch_size=2, lr=1e-2, max_len=4096, warmup=2)

    def trained():
        model = build_tiny_model(SMALL, codec.tokenizer)
        before = [p.detach().clone() for p in model.parameters()]
        losses = sft.train(model, examples, schedule, codec.pad_id, seed=0)
        return model, before, losses

    model, before, losses = trained()
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert losses[-1] < 0.7 * losses[0] and len(losses) == 12
    again, _, losses2 = trained()
    assert losses2 == losses
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), again.parameters()))


def test_right_padded_batches_run_without_a_mask_and_give_the_same_real_positions():
    right = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]])
    left = torch.tensor([[1, 1, 1, 1], [0, 0, 1, 1]])
    holes = torch.tensor([[1, 0, 1, 1]])
    assert sft.dense_or_mask(right) is None and sft.dense_or_mask(None) is None
    assert sft.dense_or_mask(left) is left and sft.dense_or_mask(holes) is holes
    torch.manual_seed(0)
    cfg = Qwen2Config(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    model = AutoModelForCausalLM.from_config(cfg).eval()
    ids = torch.randint(3, 64, (3, 4))
    with torch.no_grad():
        masked = model.model(input_ids=ids, attention_mask=right, use_cache=False).last_hidden_state
        dense = model.model(
            input_ids=ids, attention_mask=sft.dense_or_mask(right), use_cache=False
        ).last_hidden_state
    real = right.bool()
    torch.testing.assert_close(dense[real], masked[real], rtol=1e-4, atol=1e-5)
    assert sft.model_lm_loss(model, ids, right, right.float()).isfinite()
