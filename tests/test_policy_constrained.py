"""Constrained decoding of candidates-mode calls (rollout.calls: constrained): the policy draws only
its choices, the format is forced, and what is sampled is what the decisions loss scores."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from conftest import FIXTURES, fixture_params
from pappo.config import Params
from pappo.config.policy import TinyModelParams
from pappo.env.candidate_agents import NoisyCandidateAgent, Thoughtless, call
from pappo.env.protocol import ParseError, ToolCall, format_tool_call, parse_tool_call, tools_for
from pappo.env.vec import VecEnv, task_env
from pappo.io import PappoError
from pappo.policy.adapters import ActorCritic
from pappo.policy.chat import ChatCodec
from pappo.policy.checkpoint import build_tiny_model
from pappo.policy.constrained import CallTrie, call_trie, valid_calls
from pappo.policy.decisions import ARG, NAME, choice_tokens, decision_flags
from pappo.policy.decoder import Qwen2Decoder
from pappo.policy.rollout import RolloutEngine
from pappo.policy.tokenizer import corpus_files, protocol_files, train_tokenizer, warmup_files
from pappo.rl.trainer import Trainer
from pappo.tasks.store import TaskStore
from test_env_episode import FakeGrader

K = 4
TINY = TinyModelParams(
    vocab_size=2048,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=2048,
    seed=0,
)


WARMUP = Path(__file__).resolve().parents[1] / "data" / "warmup" / "repos"


@pytest.fixture(scope="module")
def codec() -> ChatCodec:
    """A tokenizer trained as the pipeline's is (warm-up source), which spells every id ' 1'..' 4'
    with one token of its own."""
    return ChatCodec(
        train_tokenizer(corpus_files(WARMUP, max_bytes=200_000), TINY.vocab_size), tools_for("candidates")
    )


def constrained_params(tmp_path: Path, **rl: object) -> Params:
    p = fixture_params(tmp_path)
    env = p.env.model_copy(
        update={
            "actions": "candidates",
            "max_turns": 3,
            "candidates": p.env.candidates.model_copy(update={"k": K}),
        }
    )
    return Params.model_validate(
        {
            **p.model_dump(by_alias=True),
            "env": env.model_dump(),
            "rollout": {
                **p.rollout.model_dump(),
                "calls": "constrained",
                "max_new_tokens_per_turn": 32,
                "max_tokens_per_episode": 1200,
                "batch_size": 8,
            },
            "rl": {
                **p.rl.model_dump(),
                "loss_tokens": "decisions",
                "updates": 1,
                "tasks_per_update": 2,
                "group_size": 2,
                "minibatches": 1,
                "micro_batch_size": 4,
                "critic_warmup_steps": 0,
                "target_kl": None,
                **rl,
            },
        }
    )


def test_the_trie_branches_exactly_at_the_choices(codec: ChatCodec):
    """Every valid call is a path of the trie ending on a stop token; the trie branches only where
    decision_flags marks a choice, and there its children are that kind's options."""
    trie, options = CallTrie(codec, "candidates", K), choice_tokens(codec, "candidates", K)
    branches = 0
    for text in valid_calls("candidates", K):
        ids = codec.encode(text)
        assert ids[-1] in codec.stop_ids and trie.allowed(ids) == []
        for i, (tok, kind) in enumerate(zip(ids, decision_flags(codec, ids))):
            kids = trie.allowed(ids[:i])
            assert tok in kids
            if len(kids) > 1:
                branches += 1
                assert kind in (NAME, ARG) and set(kids) == options[kind]
            elif kind in (NAME, ARG):  # a choice with one option left cannot happen in candidates mode
                pytest.fail(f"choice at token {i} of {text!r} is forced")
    assert branches == len(valid_calls("candidates", K)) + 2 * K  # the name, then the id of apply / view


def test_a_tokenizer_that_splits_the_format_is_refused():
    """A small BPE vocabulary spells ' 2' as one token but ' 1' as ' ' + '1', so the calls part at
    the space, a format token: the policy would choose where nothing is trained."""
    small = ChatCodec(
        train_tokenizer([*protocol_files(), *warmup_files(FIXTURES / "warmup" / "repos")], 1024),
        tools_for("candidates"),
    )
    assert small.encode(" 1") == small.encode(" ") + small.encode("1") and len(small.encode(" 2")) == 1
    with pytest.raises(PappoError, match="branch at token 14"):
        CallTrie(small, "candidates", K)


def test_params_refuse_constrained_calls_without_candidates_and_decisions(tmp_path: Path):
    p = constrained_params(tmp_path)
    raw = p.model_dump(by_alias=True)
    for section, field, value in (("rl", "loss_tokens", "response"), ("env", "actions", "free")):
        bad = {**raw, section: {**raw[section], field: value}}
        with pytest.raises(
            ValueError, match="rollout.calls constrained needs env.actions candidates and rl.loss_tokens"
        ):
            Params.model_validate(bad)
    assert (
        call_trie(
            ChatCodec.__new__(ChatCodec),
            p.model_copy(update={"rollout": p.rollout.model_copy(update={"calls": "sampled"})}),
        )
        is None
    )


def test_a_turn_limit_shorter_than_a_call_is_refused(codec: ChatCodec, tmp_path: Path):
    p = constrained_params(tmp_path)
    short = p.model_copy(update={"rollout": p.rollout.model_copy(update={"max_new_tokens_per_turn": 8})})
    with pytest.raises(PappoError, match="max_new_tokens_per_turn 8 is shorter"):
        call_trie(codec, short)


def _play(codec: ChatCodec, params: Params, model: torch.nn.Module, trie: CallTrie | None):
    store = TaskStore.from_params(params, "repofix")
    envs = [task_env(store, tid, params.env, seed=n) for n, tid in enumerate(sorted(store.tasks)[:4])]
    engine = RolloutEngine(Qwen2Decoder(model), codec, params.rollout, trie)
    return engine.run(VecEnv(envs, FakeGrader()), seed=0), envs


def test_a_random_model_writes_only_valid_calls_and_records_its_choices(codec: ChatCodec, tmp_path: Path):
    """An untrained model, constrained: every turn parses as a valid call with no thought, a forced
    token's log-prob is 0, a choice's equals the teacher-forced softmax over its options. The same
    model unconstrained writes unparsable turns, so the constraint is what makes them valid."""
    params = constrained_params(tmp_path)
    torch.manual_seed(0)
    model = build_tiny_model(TINY, codec.tokenizer).eval()
    trie = call_trie(codec, params)
    trajs, envs = _play(codec, params, model, trie)
    options = choice_tokens(codec, "candidates", K)
    temp = params.rollout.temperature
    choices = 0
    for traj, env in zip(trajs, envs):
        assert env.metrics.parse_error == 0 and env.metrics.turns >= 1
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([traj.token_ids])).logits[0].float() / temp  # (T, V)
        for a, b in traj.turn_spans:
            parsed = parse_tool_call(codec.decode(traj.token_ids[a:b]), mode="candidates")
            assert isinstance(parsed, ToolCall) and parsed.thought == ""
            for pos in range(a, b):
                kind = traj.decision_kind[pos]
                if len(trie.allowed(traj.token_ids[a:pos])) == 1:
                    assert traj.logprobs[pos] == 0.0  # forced: probability 1 under the constraint
                    continue
                choices += 1
                assert kind in (NAME, ARG)
                opts = sorted(options[kind])
                want = torch.log_softmax(logits[pos - 1, opts], -1)[opts.index(traj.token_ids[pos])]
                assert abs(traj.logprobs[pos] - float(want)) < 1e-4
    assert choices >= len(trajs)
    free = params.model_copy(update={"rollout": params.rollout.model_copy(update={"calls": "sampled"})})
    _, free_envs = _play(codec, free, model, None)
    assert sum(e.metrics.parse_error for e in free_envs) > 0


@pytest.mark.parametrize("greedy", [False, True])
def test_forced_tokens_cost_no_forward_and_choices_draw_as_token_by_token(
    codec: ChatCodec, tmp_path: Path, greedy: bool
):
    """The engine runs the model only where a row must choose (a turn: its observation, the tool,
    the id), yet every trajectory is what token-by-token sampling draws: a naive loop replays each
    episode with its own generator, one full forward per choice, one uniform per token (forced ones
    too), and picks the same ids with the same log-probs."""
    params = constrained_params(tmp_path)
    torch.manual_seed(0)
    model = build_tiny_model(TINY, codec.tokenizer).eval()
    trie = call_trie(codec, params)
    assert trie is not None
    store = TaskStore.from_params(params, "repofix")
    envs = [task_env(store, tid, params.env, seed=n) for n, tid in enumerate(sorted(store.tasks)[:4])]
    engine = RolloutEngine(Qwen2Decoder(model), codec, params.rollout, trie)
    forwards = []
    engine.forward = lambda *a: forwards.append(a[0].shape) or engine.decoder(*a)
    trajs = engine.run(VecEnv(envs, FakeGrader()), seed=0, greedy=greedy)
    turns = max(len(t.turn_spans) for t in trajs)
    # the prompt: shared part, runs, own parts (two blocks at most); a turn: observation (two), the id
    assert turns >= 2 and len(forwards) <= 4 + 3 * turns
    assert max(b - a for t in trajs for a, b in t.turn_spans) > 3  # token by token would cost more
    temp = 1.0 if greedy else params.rollout.temperature
    for i, traj in enumerate(trajs):
        gen = torch.Generator().manual_seed(i)  # engine.run(seed=0): episode i draws from seed i
        for a, b in traj.turn_spans:
            for pos in range(a, b):
                kids = trie.allowed(traj.token_ids[a:pos])
                u = None if greedy else torch.rand(1, generator=gen)
                if len(kids) == 1:
                    assert traj.token_ids[pos] == kids[0] and traj.logprobs[pos] == 0.0
                    continue
                with torch.no_grad():
                    logits = model(input_ids=torch.tensor([traj.token_ids[:pos]])).logits[0, -1].float()
                allowed = torch.full_like(logits, float("-inf"))
                allowed[kids] = 0.0
                logp = torch.log_softmax((logits + allowed) / temp, -1)  # (V,)
                if greedy:
                    want = int(logp.argmax())
                else:
                    cdf = logp.exp().cumsum(-1)
                    want = int(torch.searchsorted(cdf, u * cdf[-1], right=True).clamp(max=len(cdf) - 1))
                assert traj.token_ids[pos] == want
                assert abs(traj.logprobs[pos] - float(logp[want])) < 1e-4


def test_a_constrained_update_scores_the_choices_as_the_sampler_drew_them(codec: ChatCodec, tmp_path: Path):
    """Trainer on constrained rollouts: the recomputed log-probs of the choices equal the
    sampler's (both restricted to the options), the policy moves, the KL anchor reads the choices."""
    params = constrained_params(tmp_path, kl_coef=0.1, actor_lr=0.01)
    store = TaskStore.from_params(params, "repofix")
    torch.manual_seed(0)
    ac = ActorCritic(build_tiny_model(TINY, codec.tokenizer), params.lora)
    t = Trainer("ppo", params, ac, codec, store, sorted(store.tasks), FakeGrader(), tmp_path / "run", seed=0)
    before = [p.detach().clone() for p in ac.policy_parameters()]
    record = t.update(0)
    assert record["freeze"]["rollout/logprob_gap_max"] < 1e-4
    assert any(not torch.equal(b, p) for b, p in zip(before, ac.policy_parameters()))
    trajs, groups, index = t.rollouts(1)
    from pappo.rl.batch import from_trajectories

    batch = from_trajectories(trajs, groups, codec.pad_id, index, t.learner.choices)
    assert torch.equal(t.learner.kl_mask(batch), batch.decision_mask) and torch.equal(
        t.learner.gap_mask(batch), batch.decision_mask
    )
    assert 0 < batch.decision_mask.sum() < batch.response_mask.sum()


def test_thoughtless_demonstrations_are_the_calls_constrained_decoding_writes():
    """The wrapped agent's calls without their thought, the same text the trie holds; an
    unparsable turn (a demonstrated parse error) is kept as it was."""
    noisy = NoisyCandidateAgent(correct_id=2, k=K, seed=3, p_parse_error=0.3)
    plain = NoisyCandidateAgent(correct_id=2, k=K, seed=3, p_parse_error=0.3)
    wrapped, messages, kept = Thoughtless(noisy), [], 0
    for _ in range(12):
        want, got = plain.act(messages), wrapped.act(messages)
        parsed = parse_tool_call(want, mode="candidates")
        if isinstance(parsed, ParseError):
            assert got == want
            kept += 1
        else:
            assert (
                got
                == format_tool_call(parsed.name, parsed.arguments, mode="candidates")
                == call(parsed.name, parsed.arguments)
            )
            assert got in valid_calls("candidates", K) or parsed.arguments.get("id", 1) > K
        messages.append({"role": "assistant", "content": got})
    assert kept >= 1
