"""Batched multi-turn rollouts: exact token ids, sampler log-probs = teacher-forced log-probs, masks."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import AutoModelForCausalLM, Qwen2Config

from pappo.config.env import EnvParams
from pappo.config.policy import RolloutParams
from pappo.env.episode import RepairEnv
from pappo.env.vec import VecEnv
from pappo.io import PappoError
from pappo.policy import decode_batch
from pappo.policy.decisions import ARG, INSIDE, NAME, decision_flags
from pappo.policy.decoder import Qwen2Decoder
from pappo.policy.rollout import RolloutEngine, hf_forward, teacher_forced_logprobs
from pappo.policy.sampler import Sampler
from pappo.tasks.store import TaskStore
from test_env_episode import FakeGrader
from test_policy_decoder import reference_logits


class ByteCodec:
    """Test double of `chat.ChatCodec`: one id per byte (offset 8); ids 0-7 are special."""

    pad_id, START, END, OPEN, CLOSE = 0, 1, 2, 3, 4
    stop_ids = frozenset({2, 4})

    def _ids(self, text: str, limit: int) -> list[int]:
        return [b + 8 for b in text.encode()[:limit]]

    def prompt_ids(self, messages: list[dict]) -> list[int]:
        return [self.START] + self._ids(messages[-1]["content"], 48) + [self.END, self.START]

    def observation_ids(self, message: dict, stopped_on: int | None) -> list[int]:
        close = [] if stopped_on == self.END else [self.END]
        return close + [self.START] + self._ids(message["content"], 24) + [self.END, self.START]

    def decode(self, ids: list[int]) -> str:
        specials = {self.OPEN: "<tool_call>", self.CLOSE: "</tool_call>"}
        return "".join(specials.get(i, "") if i < 8 else bytes([i - 8]).decode(errors="replace") for i in ids)


@pytest.fixture(scope="module")
def model() -> torch.nn.Module:
    torch.manual_seed(0)
    cfg = Qwen2Config(
        vocab_size=264,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
    )
    return AutoModelForCausalLM.from_config(cfg).eval()


def play(
    model, fx_params, seed: int = 0, params: RolloutParams | None = None, n: int = 4, graphs: bool = False
):
    store = TaskStore.from_params(fx_params, "repofix")
    tasks = list(store.tasks.values())[:n]
    grader = FakeGrader()
    envs = [RepairEnv(t, store.clean(t), store.buggy(t), EnvParams(max_turns=4)) for t in tasks]
    params = params or RolloutParams(max_new_tokens_per_turn=12, max_tokens_per_episode=400)
    engine = RolloutEngine(Qwen2Decoder(model, graphs=graphs), ByteCodec(), params)
    return engine.run(VecEnv(envs, grader), seed=seed), envs


def test_sampler_logprobs_match_teacher_forcing(model, fx_params):
    trajs, envs = play(model, fx_params)
    for traj in trajs:
        tf = teacher_forced_logprobs(hf_forward(model), traj.token_ids, temperature=1.0)
        resp = torch.tensor(traj.response_mask, dtype=torch.bool)
        rec = torch.tensor(traj.logprobs)
        assert resp.sum() > 0
        assert torch.allclose(tf[resp], rec[resp], atol=1e-4), (tf[resp] - rec[resp]).abs().max()
        assert (rec[~resp] == 0).all()


def test_masks_spans_and_budget(model, fx_params):
    trajs, envs = play(model, fx_params)
    codec = ByteCodec()
    for traj, env in zip(trajs, envs):
        n = len(traj.token_ids)
        assert len(traj.logprobs) == len(traj.response_mask) == len(traj.tool_mask) == n <= 400
        assert not any(r and t for r, t in zip(traj.response_mask, traj.tool_mask))
        assert (
            traj.response_mask[: traj.prompt_len]
            == traj.tool_mask[: traj.prompt_len]
            == [0] * traj.prompt_len
        )
        assert traj.token_ids[: traj.prompt_len] == codec.prompt_ids(env.transcript[:2])
        covered = [0] * n
        for start, end in traj.turn_spans:
            covered[start:end] = [1] * (end - start)
        assert covered == traj.response_mask and len(traj.turn_spans) == env.metrics.turns
        # every gap between turns is exactly the environment's observation of the previous turn
        for k, ((_, e0), (s1, _)) in enumerate(zip(traj.turn_spans, traj.turn_spans[1:])):
            obs = env.transcript[2 + 2 * k + 1]
            stop = traj.token_ids[e0 - 1] if traj.token_ids[e0 - 1] in codec.stop_ids else None
            assert traj.token_ids[e0:s1] == codec.observation_ids(obs, stop)
            assert set(traj.tool_mask[e0:s1]) == {1}
        assert (
            traj.metrics["tokens"] == sum(traj.response_mask) and len(traj.turn_rewards) == env.metrics.turns
        )
        assert len(traj.decision_kind) == n
        assert all(
            r or not d for r, d in zip(traj.response_mask, traj.decision_kind)
        )  # decisions are sampled
        for start, end in traj.turn_spans:
            assert traj.decision_kind[start:end] == decision_flags(codec, traj.token_ids[start:end])


def test_decision_flags_mark_the_tokens_that_spell_the_values():
    """One byte a token: the first byte of the name and of each argument value opens a choice, the
    value's other bytes are INSIDE it, everything else (thought, keys, tags) is 0."""
    codec = ByteCodec()
    text = 'Try 2.\n{"name": "apply", "arguments": {"id": 31}}\n'
    ids = codec._ids("Try 2.\n", 99) + [codec.OPEN] + codec._ids(text[7:], 99) + [codec.CLOSE, codec.END]
    flags = decision_flags(codec, ids)
    assert [(chr(i - 8), f) for i, f in zip(ids, flags) if f] == [
        ("a", NAME),
        ("p", INSIDE),
        ("p", INSIDE),
        ("l", INSIDE),
        ("y", INSIDE),
        ("3", ARG),
        ("1", INSIDE),
    ]
    assert flags[-2:] == [0, 0] and decision_flags(codec, codec._ids("no call", 99)) == [0] * 7


def test_same_seed_same_rollout_and_greedy(model, fx_params):
    a, _ = play(model, fx_params, seed=3)
    b, _ = play(model, fx_params, seed=3)
    c, _ = play(model, fx_params, seed=4)
    assert [t.token_ids for t in a] == [t.token_ids for t in b] != [t.token_ids for t in c]


def together_and_alone(
    model, fx_params, params, seeds: list[int], max_turns: int, greedy: bool = False, codec=None
):
    """The fixture's repofix tasks (cycled, one episode a seed) played in one batch, then each
    alone, with the same episode seeds; returns both and the compactions the batch made."""
    store = TaskStore.from_params(fx_params, "repofix")
    pool = list(store.tasks.values())
    tasks = [pool[i % len(pool)] for i in range(len(seeds))]
    engine = RolloutEngine(Qwen2Decoder(model), codec or ByteCodec(), params)

    def envs(ts):
        return [RepairEnv(t, store.clean(t), store.buggy(t), EnvParams(max_turns=max_turns)) for t in ts]

    together = engine.run(VecEnv(envs(tasks), FakeGrader()), seed=0, greedy=greedy, episode_seeds=seeds)
    compactions = engine.compactions
    alone = [
        engine.run(VecEnv(envs([t]), FakeGrader()), seed=0, greedy=greedy, episode_seeds=[s])[0]
        for t, s in zip(tasks, seeds)
    ]
    return together, alone, compactions


@pytest.mark.parametrize("greedy", [True, False])
def test_batched_rollout_equals_one_episode_at_a_time(model, fx_params, greedy: bool):
    """Padding and sub-batches in the shared cache change nothing: each episode samples exactly
    what it samples alone (same per-episode seed)."""
    params = RolloutParams(max_new_tokens_per_turn=60, max_tokens_per_episode=900)
    together, alone, compactions = together_and_alone(model, fx_params, params, [11, 12, 13, 14], 4, greedy)
    assert [t.token_ids for t in together] == [t.token_ids for t in alone]
    if not greedy:  # sampled turns end at different steps: idle rows were left out
        assert compactions > 0
    for traj in together:  # and the recorded log-probs still match a teacher-forced pass
        tf = teacher_forced_logprobs(hf_forward(model), traj.token_ids, temperature=1.0)
        resp = torch.tensor(traj.response_mask, dtype=torch.bool)
        assert torch.allclose(tf[resp], torch.tensor(traj.logprobs)[resp], atol=1e-4)


def test_prompt_runs_share_their_prefix_and_change_no_episode(model, fx_params):
    """Consecutive episodes of one task (a training group, an evaluation task's boards) encode
    their common prompt prefix once: one forward over a row per run, then the rows' own parts;
    each episode still samples exactly what it samples alone."""
    params = RolloutParams(max_new_tokens_per_turn=40, max_tokens_per_episode=600)
    store = TaskStore.from_params(fx_params, "repofix")
    tasks = list(store.tasks.values())[:2]
    group = [tasks[0], tasks[0], tasks[1], tasks[1], tasks[1]]
    engine = RolloutEngine(Qwen2Decoder(model), ByteCodec(), params)
    shapes: list[tuple[int, ...]] = []
    engine.forward = lambda *a: shapes.append(tuple(a[0].shape)) or engine.decoder(*a)

    def envs(ts):
        return [RepairEnv(t, store.clean(t), store.buggy(t), EnvParams(max_turns=3)) for t in ts]

    seeds = [21, 22, 23, 24, 25]
    together = engine.run(VecEnv(envs(group), FakeGrader()), seed=0, episode_seeds=seeds)
    width = together[0].prompt_len
    assert {t.prompt_len for t in together} == {width}
    assert shapes[:2] == [(2, width - 1), (5, 1)]  # one row a run, then each row's last token
    alone = [
        engine.run(VecEnv(envs([t]), FakeGrader()), seed=0, episode_seeds=[s])[0]
        for t, s in zip(group, seeds)
    ]
    assert [t.token_ids for t in together] == [t.token_ids for t in alone]
    for a, b in zip(together, alone):
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < 1e-5


def test_runs_are_consecutive_prompts_sharing_enough_beyond_the_common_prefix():
    """Worked example: rows 0-1 share 40 tokens, row 2 shares 17 with them, which every row
    shares: a run needs 16 more (MIN_SHARED_PREFIX), so a run of two, then a row alone."""
    a, b, c = [1] * 40 + [2, 2], [1] * 40 + [3], [1] * 17 + [4] * 5
    assert decode_batch._shared_len([a, b, c]) == 17
    assert decode_batch._runs([a, b, c], 17) == [(0, 2, 40), (2, 3, 17)]
    assert decode_batch._runs([a, a], 0) == [(0, 2, 41)]  # equal prompts keep one token each
    assert decode_batch._shared_len([a]) == 0 and decode_batch._shared_len([[1] * 9 + [2], [1] * 10]) == 0


@pytest.mark.parametrize("shared_first", [True, False])
@torch.inference_mode()  # as RolloutEngine.run
def test_a_split_feed_gives_what_one_padded_block_gives(model, shared_first):
    """Chunks of very different lengths fed as two sub-batches (two forwards, each padded to its
    own longest) give one left-padded block's last logits, and so does the next token after them;
    also as a batch's first feed, into an empty cache."""
    decoder = Qwen2Decoder(model)
    chunks = [[9 + (i * 7 + n) % 250 for i in range(n)] for n in (3, 40, 4, 41)]
    calls: list[int] = []

    def forward(*a):
        calls.append(a[0].shape[0])
        return decoder(*a)

    one = decode_batch.DecodeBatch([0, 1, 2, 3], decoder.new_cache(), decoder.device)
    two = decode_batch.DecodeBatch([0, 1, 2, 3], decoder.new_cache(), decoder.device)
    shared = 3 if shared_first else 0
    for batch in (one, two):  # a prompt's shared part first, as feed_prompts feeds it
        if shared:
            batch.feed(forward, [[5, 6, 7]] * 4, 0)
    calls.clear()
    a = one.feed(forward, chunks, 0)
    b = two.feed_split(forward, chunks, 0)
    assert calls == [4, 2, 2]
    assert torch.allclose(a, b, atol=1e-5)
    nxt = [[17], [18], [19], [20]]
    assert torch.allclose(one.feed(forward, nxt, 0), two.feed(forward, nxt, 0), atol=1e-5)
    assert two.mask.shape[1] == shared + 4 + 41 + 1 and two.mask.sum() == one.mask.sum()  # each block's width


def last_logits_alone(model, rows: list[list[int]]) -> torch.Tensor:
    """Each row's last logits, the row alone and unpadded through the transformers forward: (B, V)."""
    return torch.stack([logits[-1] for logits in reference_logits(model, rows)])


@torch.inference_mode()  # as RolloutEngine.run
def test_a_feed_past_the_limit_repacks_or_groups_and_never_grows_a_static_cache(model):
    """Every row fits `limit` (60) but side by side they do not: the holes idle rows leave are
    repacked away first; a long row beside a short row's long chunk is fed in two groups. The static
    cache keeps its 60 positions and each row's logits are its own alone; dies without the limit
    (the cache doubles) or if a group or a narrower sub-batch loses or shifts columns."""
    decoder = Qwen2Decoder(model)
    batch = decode_batch.DecodeBatch([0, 1, 2], decoder.new_cache(60), decoder.device, limit=60)
    parts: list[list[list[int]]] = []
    real_fit = batch._fit
    batch._fit = lambda chunks: parts.append(real_fit(chunks)) or parts[-1]
    seqs = [[9 + (i * 5 + r) % 250 for i in range(n)] for r, n in enumerate((30, 4, 20))]

    def feed(chunks: list[list[int]]) -> torch.Tensor:
        for r, c in enumerate(chunks):
            seqs[r] += c
        return batch.feed(decoder, chunks, 0)

    batch.feed(decoder, [list(s) for s in seqs], 0)
    for i in range(20):  # row 1 idles: real 50, 4, 40 in 50 columns
        feed([[40 + i], [], [70 + i]])
    for i in range(11):  # then row 0: the 11th step needs column 61; repacked to 50, it fits
        feed([[], [100 + i], [120 + i]])
    assert (batch.width, parts) == (51, [])  # real 50, 15, 51: no holes left for the longest row
    logits = feed([[99] * 8, [98] * 30, [97] * 5])  # 51 + 30 > 60; 58, 45 and 56 alone
    assert parts == [[[0, 2], [1]]]  # rows 2 and 0 (51 + 8) together, row 1 (15 + 30) in a group of its own
    assert batch.cache.k[0].shape[2] == 60 and batch.width == 59  # never reallocated larger
    torch.testing.assert_close(logits, last_logits_alone(model, seqs), atol=1e-5, rtol=1e-5)
    nxt = feed([[11], [12], [13]])  # the merged batch decodes on
    torch.testing.assert_close(nxt, last_logits_alone(model, seqs), atol=1e-5, rtol=1e-5)
    assert batch.cache.k[0].shape[2] == 60 and [len(s) for s in seqs] == [59, 46, 57]


def test_token_budget_truncates_the_episode(model, fx_params):
    tight = RolloutParams(max_new_tokens_per_turn=12, max_tokens_per_episode=90)
    trajs, envs = play(model, fx_params, params=tight)
    for traj, env in zip(trajs, envs):
        assert len(traj.token_ids) <= 90 and env.done
        assert env.metrics.truncated or env.metrics.turns == 4


def test_a_prompt_with_no_room_for_a_turn_is_refused_before_anything_is_fed(model, fx_params):
    class LongPrompts(ByteCodec):
        def prompt_ids(self, messages: list[dict]) -> list[int]:
            return [self.START] + self._ids(messages[-1]["content"], 10_000) + [self.END, self.START]

    store = TaskStore.from_params(fx_params, "repofix")
    tasks = list(store.tasks.values())[:3]
    envs = [RepairEnv(t, store.clean(t), store.buggy(t), EnvParams(max_turns=4)) for t in tasks]
    vec = VecEnv(envs, FakeGrader())
    lengths = [len(LongPrompts().prompt_ids(messages)) for messages in vec.reset()]
    limit = sorted(lengths)[1]  # one prompt fits with room, two do not
    assert lengths.count(limit) == 1 and min(lengths) < limit
    params = RolloutParams(max_new_tokens_per_turn=12, max_tokens_per_episode=limit, kv_cache="static")
    engine = RolloutEngine(Qwen2Decoder(model), LongPrompts(), params)
    fed, forward = [], engine.forward
    engine.forward = lambda *args: fed.append(1) or forward(*args)
    with pytest.raises(PappoError) as e:
        engine.run(vec, seed=0)
    refused = [t.instance_id for t, n in zip(tasks, lengths) if n >= limit]
    assert len(refused) == 2 and all(task in str(e.value) for task in refused)
    assert "rollout.max_tokens_per_episode" in str(e.value) and f"at least {max(lengths) + 1}" in str(e.value)
    assert not fed


def test_top_p_only_samples_the_nucleus():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    sampler = Sampler(RolloutParams(top_p=0.7), seeds=[0])
    seen = {int(sampler(logits, [0])[0]) for _ in range(200)}
    assert seen == {0, 1}
    ids, lp = sampler(logits, [0])
    assert torch.allclose(lp, torch.log(torch.tensor([0.5, 0.3]))[ids])  # full-distribution log-prob


def test_a_static_kv_cache_gives_the_same_tokens_and_logprobs_allocated_once(model, fx_params, monkeypatch):
    """rollout.kv_cache static: one allocation of max_tokens_per_episode positions (no growth while
    every row stays inside it) and exactly the tokens and log-probs of the growing cache; dies if
    the cache still doubles, or if the larger buffer leaks into the attention."""
    from pappo.policy import kv_cache

    grow = RolloutParams(max_new_tokens_per_turn=60, max_tokens_per_episode=900)
    sizes: list[tuple[int | None, int]] = []
    real = kv_cache.KVCache.size_for
    monkeypatch.setattr(
        kv_cache.KVCache, "size_for", lambda self, n: sizes.append((self.capacity, n)) or real(self, n)
    )
    a, _ = play(model, fx_params, seed=5, params=grow)
    grown = len(sizes)
    sizes.clear()
    b, _ = play(model, fx_params, seed=5, params=grow.model_copy(update={"kv_cache": "static"}))
    assert grown > 1 and all(cap == 900 for cap, _ in sizes)
    assert all(real(kv_cache.KVCache(1, cap), n) == 900 for cap, n in sizes)  # never past the fixed capacity
    assert [t.token_ids for t in a] == [t.token_ids for t in b]
    assert [t.logprobs for t in a] == [t.logprobs for t in b]  # bit for bit, not only within 1e-5


class StatementCodec(ByteCodec):
    """ByteCodec with prompts of unequal length: 60 + (the statement's length mod 251) of its bytes
    (73 to 291 ids on the fixture's tasks)."""

    def prompt_ids(self, messages: list[dict]) -> list[int]:
        text = messages[-1]["content"]
        return [self.START] + self._ids(text, 60 + len(text.encode()) % 251) + [self.END, self.START]


@pytest.fixture(scope="module")
def never_stops(model) -> torch.nn.Module:
    """The module's model with the stop ids' logits lowered by 1e4 (an lm_head bias, as
    benchmarks/gpu_step.py gives ids its tokenizer lacks): every turn runs to its limit, so every
    episode's length is set by the limits alone, on any machine's floats."""
    twin = copy.deepcopy(model)
    head = torch.nn.Linear(twin.config.hidden_size, twin.config.vocab_size, bias=True)
    with torch.no_grad():
        head.weight.copy_(twin.lm_head.weight)
        head.bias.zero_()
        head.bias[sorted(ByteCodec.stop_ids)] = -1e4
    twin.lm_head = head
    return twin


@pytest.mark.parametrize("limit", [300, 480, 560])
def test_episodes_at_the_limit_keep_a_static_cache_and_their_own_tokens(
    never_stops, fx_params, monkeypatch, limit
):
    """Five episodes with prompts of unequal length run to a tight token limit, rows reaching it
    mid-turn while others decode on: the batch is repacked, compacted or fed in groups where it
    would pass the limit (`DecodeBatch.limit`), so the static cache is never reallocated larger,
    a decode step is never fed in groups (idle rows in the way are compacted away once, not split
    off at every step), each episode samples exactly what it samples alone, and a growing cache
    makes the same choices, bit for bit. Dies if a feed
    takes the batch past the limit (the cache grows), if a row's keys move, or without the
    compaction (decode steps fed in groups at each of these limits)."""
    from pappo.policy import kv_cache

    params = RolloutParams(max_new_tokens_per_turn=60, max_tokens_per_episode=limit, kv_cache="static")
    sizes: list[int] = []
    over: list[int] = []
    grouped: list[int] = []
    real_size, real_fits, real_fit = (
        kv_cache.KVCache.size_for,
        decode_batch.DecodeBatch.fits,
        decode_batch.DecodeBatch._fit,
    )
    monkeypatch.setattr(kv_cache.KVCache, "size_for", lambda self, n: sizes.append(n) or real_size(self, n))
    monkeypatch.setattr(
        decode_batch.DecodeBatch, "fits", lambda self, w: real_fits(self, w) or over.append(w) is not None
    )
    monkeypatch.setattr(
        decode_batch.DecodeBatch,
        "_fit",
        lambda self, c: grouped.append(max(map(len, c))) or real_fit(self, c),
    )
    seeds = [40, 41, 42, 43, 44]  # five: one row idle at the limit leaves four live, more than 3/4
    together, alone, _ = together_and_alone(never_stops, fx_params, params, seeds, 6, codec=StatementCodec())
    assert over and max(sizes) <= limit  # the limit was in the way, and no feed went past it
    assert 1 not in grouped
    assert [t.token_ids for t in together] == [t.token_ids for t in alone]
    assert max(len(t.token_ids) for t in together) == limit  # episodes ran to the limit
    for a, b in zip(together, alone):
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < 1e-5
    grow = params.model_copy(update={"kv_cache": "grow"})  # the same choices, so bit for bit the same
    grown, _, _ = together_and_alone(never_stops, fx_params, grow, seeds, 6, codec=StatementCodec())
    assert [(t.token_ids, t.logprobs) for t in grown] == [(t.token_ids, t.logprobs) for t in together]


@torch.inference_mode()  # as RolloutEngine.run
def test_a_decode_step_writes_one_mask_column_in_place(model):
    """The attention mask the model sees is every chunk's padding mask side by side (what
    concatenating them gives), across a split feed, a compaction and a merge, and a decode step
    within the buffer's capacity writes into the same buffer: dies if the mask is rebuilt (or copied
    to the device) at every step again, or if a grown buffer loses or shifts columns."""
    decoder = Qwen2Decoder(model)
    seen: list[torch.Tensor] = []

    def forward(ids, mask, *rest):
        seen.append(mask.clone())
        return decoder(ids, mask, *rest)

    batch = decode_batch.DecodeBatch([0, 1, 2, 3], decoder.new_cache(), decoder.device)
    chunks = [[9] * n for n in (3, 40, 4, 41)]
    batch.feed_split(forward, chunks, 0)
    expected = batch.mask.tolist()  # a split feed may repack: read what it left
    assert [sum(r) for r in expected] == [3, 40, 4, 41]
    buffers = set()
    for _ in range(5):
        batch.feed(forward, [[17], [], [18], [19]], 0)  # row 1 idle: a padding column
        expected = [e + [int(r != 1)] for r, e in enumerate(expected)]
        assert seen[-1].tolist() == expected and batch.mask.device == decoder.device
        buffers.add(batch._mask.data_ptr())
    assert len(buffers) <= 2  # at most one growth in five steps, not a new tensor each step
    sub = batch.compact([0, 2])
    sub.feed(forward, [[20], [21]], 0)
    batch.absorb(sub, [0, 2])
    expected = [e + [int(r in (0, 2))] for r, e in enumerate(expected)]
    assert batch.mask.tolist() == expected
    batch.feed(forward, [[22]] * 4, 0)
    assert seen[-1].tolist() == [e + [1] for e in expected]
