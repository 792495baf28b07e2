"""rl.critic_trunk policy: the value head reads the policy's hidden states, detached. One trunk pass
per micro-batch serves the actor and the critic; the actor's gradient is the actor loss's alone; the
critic learns its head (and reward weight), never the critic adapter; the warm-up reads the
features once. Against rl.critic_trunk adapter (a second pass, as verl's separate critic)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pappo.config import Params
from pappo.rl.batch import from_trajectories, token_values
from pappo.rl.freeze import freeze
from pappo.rl.update import actor_loss, critic_loss, critic_warmup, ppo_step
from test_rl_trainer import moved, small_params, snapshot, trainer


def frozen_batch(t):
    trajs, groups, index = t.rollouts(0)
    batch = from_trajectories(trajs, groups, 0, index)
    freeze(t.learner, batch)
    return batch


def count_trunk_passes(t, monkeypatch) -> list[int]:
    calls = [0]
    ac = t.learner.ac
    inner = ac._hidden

    def counted(*args, **kwargs):
        calls[0] += 1
        return inner(*args, **kwargs)

    monkeypatch.setattr(ac, "_hidden", counted)
    return calls


@pytest.mark.parametrize(("trunk", "per_micro"), [("adapter", 2), ("policy", 1)])
def test_a_ppo_step_runs_the_trunk_once_per_micro_batch_with_the_policy_trunk(
    fx_params: Params, tmp_path: Path, monkeypatch, trunk: str, per_micro: int
):
    params = small_params(fx_params, critic_trunk=trunk, critic_sees_rewards=True)
    t = trainer("pappo", params, tmp_path)
    batch = frozen_batch(t)
    calls = count_trunk_passes(t, monkeypatch)
    idx = torch.arange(len(batch))
    stats = ppo_step(t.learner, batch, idx)
    assert stats and calls[0] == per_micro * len(t.learner.micro(batch, idx))


def test_the_policy_trunk_leaves_the_actor_gradient_to_the_actor_loss(fx_params: Params, tmp_path: Path):
    params = small_params(fx_params, critic_trunk="policy", critic_sees_rewards=True, critic_lr=0.05)
    t = trainer("ppo", params, tmp_path)
    batch, ac = frozen_batch(t), t.learner.ac
    mb = batch.select(torch.arange(len(batch)))
    hidden = t.learner.shared_trunk(mb)
    loss, _ = actor_loss(t.learner, mb, hidden)
    v_loss, _ = critic_loss(t.learner, mb, token_values(ac, mb, True, hidden))
    (loss + 10.0 * v_loss).backward()
    together = [p.grad.clone() for p in ac.policy_parameters()]
    assert all(p.grad is None for p in ac.adapter_parameters("critic"))  # the critic adapter is unused
    assert ac.value_head.weight.grad is not None and ac.value_head.weight.grad.abs().sum() > 0
    for p in ac.policy_parameters() + ac.critic_parameters():
        p.grad = None
    actor_loss(t.learner, mb)[0].backward()  # the actor loss alone, its own pass
    alone = [p.grad for p in ac.policy_parameters()]
    assert any(g.abs().sum() > 0 for g in alone)
    for a, b in zip(together, alone):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-8)


def test_a_policy_trunk_run_trains_the_policy_and_the_head_not_the_critic_adapter(
    fx_params: Params, tmp_path: Path
):
    params = small_params(
        fx_params, critic_trunk="policy", actor_lr=0.05, critic_lr=0.05, critic_warmup_steps=2
    )
    t = trainer("ppo", params, tmp_path)
    ac = t.learner.ac
    policy, adapter = snapshot(ac.policy_parameters()), snapshot(ac.adapter_parameters("critic"))
    head = snapshot(list(ac.value_head.parameters()))
    [record] = t.run()
    assert len(record["critic_warmup"]) == 2 and record["steps"]
    assert moved(policy, ac.policy_parameters()) and moved(head, list(ac.value_head.parameters()))
    assert not moved(adapter, ac.adapter_parameters("critic"))


@pytest.mark.parametrize(("trunk", "passes"), [("adapter", 3), ("policy", 1)])
def test_the_policy_trunk_warmup_reads_the_features_once(
    fx_params: Params, tmp_path: Path, monkeypatch, trunk: str, passes: int
):
    """3 warm-up steps: the critic adapter is run at every step, the policy's features once."""
    params = small_params(fx_params, critic_trunk=trunk, critic_lr=0.05, critic_warmup_steps=3)
    t = trainer("ppo", params, tmp_path)
    trajs, groups, index = t.rollouts(0)
    batch = from_trajectories(trajs, groups, 0, index)
    head = snapshot(list(t.learner.ac.value_head.parameters()))
    calls = count_trunk_passes(t, monkeypatch)
    steps = critic_warmup(t.learner, batch)
    assert len(steps) == 3 and calls[0] == passes * len(t.learner.micro(batch, torch.arange(len(batch))))
    assert moved(head, list(t.learner.ac.value_head.parameters()))
