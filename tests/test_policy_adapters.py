"""ActorCritic: one frozen base, a policy and a critic LoRA adapter, a value head; isolation and save/load."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import transformers
from torch import nn

from pappo.config.policy import LoraParams
from pappo.io import PappoError
from pappo.policy import adapters
from pappo.policy.adapters import ActorCritic

LORA = LoraParams(rank=4, alpha=8.0)
TARGETS = set(LORA.target_modules)


def tiny_base(seed: int = 0, hidden_size: int = 32) -> transformers.PreTrainedModel:
    cfg = transformers.Qwen2Config(
        vocab_size=256,
        hidden_size=hidden_size,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    return transformers.AutoModelForCausalLM.from_config(cfg).eval()


def batch(seed: int = 1, b: int = 2, t: int = 7) -> torch.Tensor:
    return torch.randint(0, 256, (b, t), generator=torch.Generator().manual_seed(seed))  # (B, T)


def snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def changed(model: nn.Module, before: dict[str, torch.Tensor]) -> set[str]:
    return {name for name, p in model.named_parameters() if not torch.equal(p, before[name])}


def names_of(model: nn.Module, params: list[nn.Parameter]) -> set[str]:
    ids = {id(p) for p in params}
    return {name for name, p in model.named_parameters() if id(p) in ids}


def perturb_adapters(ac: ActorCritic, seed: int = 2) -> None:
    """Stand-in for training: non-zero LoRA B so both adapters change the base's output."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in ac.policy_parameters() + ac.critic_parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=gen))


@pytest.fixture
def ac() -> ActorCritic:
    torch.manual_seed(3)
    return ActorCritic(tiny_base(), LORA).eval()


def test_one_frozen_base_serves_both_adapters() -> None:
    base = tiny_base()
    base_params = list(base.parameters())  # before peft injects LoRA tensors into its modules
    base_numel = sum(p.numel() for p in base_params)
    q_weight = base.model.layers[0].self_attn.q_proj.weight
    ac = ActorCritic(base, LORA)

    q_proj = ac.peft.get_base_model().model.layers[0].self_attn.q_proj
    assert q_proj.base_layer.weight is q_weight  # wrapped in place, not copied
    seen: list[int] = []
    q_proj.base_layer.register_forward_hook(lambda mod, args, out: seen.append(mod.weight.data_ptr()))
    ids = batch()
    ac.policy_forward(ids)
    ac.values(ids)
    assert seen == [q_weight.data_ptr()] * 2

    trainable = {n for n, p in ac.named_parameters() if p.requires_grad}
    assert trainable == names_of(ac, ac.policy_parameters()) | names_of(ac, ac.critic_parameters())
    assert not any(p.requires_grad for p in base_params)
    per_adapter = sum(
        LORA.rank * (m.in_features + m.out_features)
        for name, m in tiny_base().named_modules()
        if isinstance(m, nn.Linear) and name.rsplit(".", 1)[-1] in TARGETS
    )
    assert sum(p.numel() for p in ac.policy_parameters()) == per_adapter
    head = 32 + 1 + 1  # value head (H weights, a bias) and the critic's reward weight
    assert sum(p.numel() for p in ac.critic_parameters()) == per_adapter + head
    assert sum(p.numel() for p in ac.parameters()) == base_numel + 2 * per_adapter + head


def test_fresh_policy_equals_base_exactly() -> None:
    base = tiny_base()
    ids = batch()
    with torch.no_grad():
        reference = base(input_ids=ids).logits  # (B, T, V)
        logits = ActorCritic(base, LORA).eval().policy_forward(ids).logits
    assert logits.shape == (2, 7, 256)
    assert torch.equal(logits, reference)


def test_each_optimizer_step_changes_only_its_own_adapter(ac: ActorCritic) -> None:
    ids = batch()
    with torch.no_grad():
        base_logits = ac.policy_forward(ids).logits
    policy_opt = torch.optim.Adam(ac.policy_parameters(), lr=1e-2)
    critic_opt = torch.optim.Adam(ac.critic_parameters(), lr=1e-2)
    policy_names, critic_names = names_of(ac, ac.policy_parameters()), names_of(ac, ac.critic_parameters())

    before = snapshot(ac)
    ac.policy_forward(ids).logits.log_softmax(-1)[..., 0].mean().backward()
    assert all(p.grad is None for p in ac.critic_parameters())
    policy_opt.step()
    policy_opt.zero_grad()
    moved = changed(ac, before)
    assert moved and moved <= policy_names
    assert {n for n in policy_names if "lora_B" in n} <= moved  # B gets a gradient first (A's is 0 at B = 0)

    with torch.no_grad():
        trained_logits = ac.policy_forward(ids).logits
    assert not torch.allclose(trained_logits, base_logits)

    for _ in range(2):
        before = snapshot(ac)
        critic_opt.zero_grad()
        ((ac.values(ids) - 1.0) ** 2).mean().backward()
        assert all(p.grad is None or not p.grad.any() for p in ac.policy_parameters())
        critic_opt.step()
        moved = changed(ac, before)
        assert moved <= critic_names and {"value_head.weight", "value_head.bias"} <= moved
        assert {n for n in critic_names if "lora_B" in n} <= moved
    with torch.no_grad():
        assert torch.equal(ac.policy_forward(ids).logits, trained_logits)


def test_one_backward_through_both_forwards_reaches_both_adapters(ac: ActorCritic) -> None:
    # A PPO step may build both graphs before one backward; peft's set_adapter alone would turn
    # requires_grad off on the policy LoRA in between and silently drop its gradient.
    perturb_adapters(ac)
    ids = batch()
    log_probs = ac.policy_forward(ids).logits.log_softmax(-1)[..., 0]  # (B, T)
    values = ac.values(ids) + ac.reward_values(torch.ones(ids.shape))  # (B, T)
    (log_probs.mean() + values.pow(2).mean()).backward()
    for p in ac.policy_parameters() + ac.critic_parameters():
        assert p.grad is not None and p.grad.any()


def test_switching_is_stateless(ac: ActorCritic) -> None:
    perturb_adapters(ac)
    ids = batch()
    with torch.no_grad():
        first = ac.policy_forward(ids).logits
        values = ac.values(ids)
        assert torch.equal(ac.policy_forward(ids).logits, first)
        assert torch.equal(ac.values(ids), values)
        assert ac.peft.active_adapter == "critic"  # values ran last
        with ac.adapter("policy") as peft_model:  # e.g. for peft_model.generate(...)
            assert peft_model.active_adapter == "policy"
        assert ac.peft.active_adapter == "critic"  # restored
        with ac.peft.disable_adapter():
            bare = ac.peft(input_ids=ids).logits
    assert not torch.allclose(first, bare)
    with pytest.raises(PappoError, match="policy"):
        with ac.adapter("actor"):
            pass


def test_left_padding_matches_unpadded(ac: ActorCritic) -> None:
    perturb_adapters(ac)
    ids = batch(t=5)[:1]  # (1, 5)
    padded = torch.cat([torch.zeros(1, 3, dtype=torch.long), ids], dim=1)  # (1, 8)
    mask = torch.cat([torch.zeros(1, 3), torch.ones(1, 5)], dim=1).long()  # (1, 8)
    both = torch.cat([padded, batch(seed=4, b=1, t=8)])  # (2, 8): the second row unpadded
    both_mask = torch.cat([mask, torch.ones(1, 8, dtype=torch.long)])  # (2, 8)
    positions = (both_mask.cumsum(-1) - 1).clamp(min=0)  # (2, 8)
    with torch.no_grad():
        alone = ac.values(ids)  # (1, 5)
        derived = ac.values(both, attention_mask=both_mask)  # (2, 8)
        explicit = ac.values(both, attention_mask=both_mask, position_ids=positions)
        logits_alone = ac.policy_forward(ids).logits
        logits_padded = ac.policy_forward(both, attention_mask=both_mask).logits
    assert derived.shape == (2, 8) and derived.dtype == torch.float32
    torch.testing.assert_close(derived[:1, 3:], alone, atol=1e-5, rtol=0)
    torch.testing.assert_close(explicit, derived, atol=0, rtol=0)
    torch.testing.assert_close(logits_padded[:1, 3:], logits_alone, atol=1e-5, rtol=0)


def test_save_load_round_trip(ac: ActorCritic, tmp_path: Path) -> None:
    perturb_adapters(ac)
    ids = batch()
    ac.save(tmp_path / "ckpt")
    for rel in (
        "policy/adapter_model.safetensors",
        "critic/adapter_model.safetensors",
        "value_head.safetensors",
        "actor_critic.json",
    ):
        assert (tmp_path / "ckpt" / rel).is_file()

    torch.manual_seed(99)  # the loaded adapters must not depend on fresh-init randomness
    loaded = ActorCritic.load(tiny_base(), tmp_path / "ckpt").eval()
    assert loaded.lora == LORA and loaded.peft.active_adapter == "policy"
    with torch.no_grad():
        assert torch.equal(loaded.policy_forward(ids).logits, ac.policy_forward(ids).logits)
        assert torch.equal(loaded.values(ids), ac.values(ids))
    assert names_of(loaded, loaded.policy_parameters()) == names_of(ac, ac.policy_parameters())
    assert all(p.requires_grad for p in loaded.policy_parameters() + loaded.critic_parameters())


def test_unknown_target_modules_name_the_available_ones() -> None:
    with pytest.raises(PappoError, match=r"\['nope'\].*q_proj.*lora.target_modules") as err:
        ActorCritic(tiny_base(), LoraParams(target_modules=["nope"]))
    assert "down_proj" in str(err.value)
    with pytest.raises(PappoError, match="q_prj"):  # a typo among valid names is caught too
        ActorCritic(tiny_base(), LoraParams(target_modules=["q_proj", "q_prj"]))


def test_misuse_is_reported(ac: ActorCritic, tmp_path: Path) -> None:
    with pytest.raises(PappoError, match="already carries peft adapters"):
        ActorCritic(ac.peft.get_base_model(), LORA)
    with pytest.raises(PappoError, match="actor_critic.json: missing"):
        ActorCritic.load(tiny_base(), tmp_path / "nothing")
    ac.save(tmp_path / "ckpt")
    with pytest.raises(PappoError, match="hidden_size 32 but the base model has 64"):
        ActorCritic.load(tiny_base(hidden_size=64), tmp_path / "ckpt")


def test_saved_adapter_configs_do_not_depend_on_set_order(ac: ActorCritic, tmp_path: Path) -> None:
    """peft writes target_modules from a set; the saved files must be the same in every process."""
    import json

    ac.save(tmp_path / "a")
    for name in ("policy", "critic"):
        config = json.loads((tmp_path / "a" / name / "adapter_config.json").read_text())
        assert config["target_modules"] == sorted(TARGETS)


def test_common_prefix_len_is_the_common_start_leaving_each_row_a_token() -> None:
    from pappo.policy.prefix import common_prefix_len

    ids = [[5, 6, 7, 8, 9], [5, 6, 7, 1, 9], [5, 6, 7, 8, 2]]
    assert common_prefix_len(ids) == 3
    assert common_prefix_len([ids[0], ids[0]]) == 4  # identical rows: the last token stays their own
    assert common_prefix_len([ids[0], ids[0][:3]]) == 2  # the shorter row keeps one token
    assert common_prefix_len(ids[:1]) == 0  # one row shares with nobody
    assert common_prefix_len([[1, 2], [3, 2]]) == 0 and common_prefix_len([[1], [1]]) == 0


def _outputs_and_grads(ac: ActorCritic, ids: torch.Tensor, attn: torch.Tensor):
    """Policy hidden states and values (B, T) on the real tokens, and every adapter gradient."""
    for p in ac.parameters():
        p.grad = None
    hidden, values = ac.policy_hidden(ids, attn), ac.values(ids, attn)
    real = attn.bool()
    probe = torch.randn(hidden.shape, generator=torch.Generator().manual_seed(5))  # a loss of every output
    ((hidden * probe * attn[..., None]).sum() + (values * attn).sum()).backward()
    grads = {n: p.grad.clone() for n, p in ac.named_parameters() if p.grad is not None}
    return hidden.detach()[real], values.detach()[real], grads


def test_a_shared_prefix_runs_once_with_the_same_outputs_and_gradients(
    ac: ActorCritic, monkeypatch: pytest.MonkeyPatch
) -> None:
    perturb_adapters(ac)
    ids = batch(seed=3, b=4, t=40)
    ids[:, :24] = ids[0, :24]  # a system prompt every row starts with
    attn = torch.ones_like(ids)
    attn[1, 30:], attn[3, 26:] = 0, 0  # right padding, as RolloutBatch holds rows
    monkeypatch.setattr(adapters, "MIN_SHARED_PREFIX", 10**9)  # the plain path: every row in full
    plain = _outputs_and_grads(ac, ids, attn)
    monkeypatch.setattr(adapters, "MIN_SHARED_PREFIX", 16)
    widths: list[tuple[int, int]] = []
    decoder = ac.peft.get_base_model().base_model
    hook = decoder.register_forward_pre_hook(
        lambda m, a, kw: widths.append(tuple(kw["input_ids"].shape)), with_kwargs=True
    )
    shared = _outputs_and_grads(ac, ids, attn)
    hook.remove()
    assert widths == [(1, 24), (4, 16)] * 2  # the prefix once, then every row's own tokens (policy, critic)
    torch.testing.assert_close(shared[0], plain[0], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(shared[1], plain[1], rtol=1e-4, atol=1e-5)
    assert shared[2].keys() == plain[2].keys()
    assert (
        len(plain[2]) == len(ac.policy_parameters()) + len(ac.critic_parameters()) - 1
    )  # reward weight unread
    for name, grad in plain[2].items():  # float32 sums in another order: close relative to the tensor's norm
        assert float((shared[2][name] - grad).norm()) <= 1e-4 * float(grad.norm()), name


def test_left_padded_rows_do_not_share_a_prefix(ac: ActorCritic, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = batch(seed=4, b=2, t=30)
    ids[1, :20] = ids[0, :20]
    attn = torch.ones_like(ids)
    attn[0, :2] = 0  # left padding: positions come from the mask, the plain path's job
    monkeypatch.setattr(adapters, "MIN_SHARED_PREFIX", 10**9)
    plain = ac.values(ids, attn).detach()
    monkeypatch.setattr(adapters, "MIN_SHARED_PREFIX", 4)
    torch.testing.assert_close(ac.values(ids, attn).detach(), plain)
