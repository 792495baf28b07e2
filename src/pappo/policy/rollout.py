"""Batched multi-turn rollouts: B episodes advance in lockstep with one KV cache across turns.

Shapes: B episodes still running, T tokens of a sequence, V vocabulary. Each trajectory keeps the
exact token ids fed to the model (prompt, sampled turns, environment observations), the
sampler's log-probs of the sampled ids, `response_mask` (policy tokens) and `tool_mask`
(environment tokens after the prompt), and where each turn starts and ends. Old log-probs for PPO
are these recorded values, never a re-tokenisation of text (the original package's bug, which
made every ratio 1.0).

The cache is never rebuilt: a turn's observation is fed as a left-padded chunk whose padding is
masked out, with positions counted over real tokens only, so each sequence sees exactly what it
would see alone. Finished episodes are dropped from the batch (`KVCache.keep`). The model runs
through `decoder.Qwen2Decoder`, a lean inference forward; the transformers forward serves training.
Log-probs are of the full temperature-scaled distribution (top-p only shapes what is sampled),
as in verl; `teacher_forced_logprobs` recomputes them from the ids for the check. With a call
trie (`rollout.calls: constrained`) the distribution is restricted to what may follow the turn's
prefix: a forced token gets log-prob 0, a choice the softmax over its options.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import DynamicCache

from pappo.config import RolloutParams
from pappo.env.vec import VecEnv
from pappo.policy.constrained import CallTrie
from pappo.policy.decisions import decision_flags
from pappo.policy.decoder import KVCache, Qwen2Decoder

# forward(input_ids (B, T), attention_mask (B, T_total), position_ids (B, T), cache, last_only)
#   -> logits (B, T, V), or (B, 1, V) when last_only
Forward = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, Any, bool], torch.Tensor]


@dataclass
class Trajectory:
    """One episode as the model saw it; lists are aligned token by token (length T)."""

    instance_id: str
    token_ids: list[int]
    logprobs: list[float]  # sampler log-prob on response tokens, 0.0 elsewhere
    response_mask: list[int]  # 1 where the policy sampled the token
    tool_mask: list[int]  # 1 on environment tokens appended after the prompt
    prompt_len: int
    decision_kind: list[int] = field(
        default_factory=list
    )  # kind of choice a sampled token spells (decisions.decision_flags), 0 elsewhere
    turn_spans: list[tuple[int, int]] = field(default_factory=list)  # [start, end) of each turn's sampled ids
    turn_rewards: list[float] = field(default_factory=list)  # per turn, terminal reward on the last
    terminal_reward: float = 0.0  # the part of the last turn's reward that is the outcome
    metrics: dict[str, Any] = field(default_factory=dict)  # the env's episode metrics + tokens

    def append(self, ids: Sequence[int], policy: bool, logprobs: Sequence[float] | None = None) -> None:
        self.token_ids += ids
        self.logprobs += list(logprobs) if logprobs is not None else [0.0] * len(ids)
        self.response_mask += [int(policy)] * len(ids)
        self.tool_mask += [int(not policy)] * len(ids)
        self.decision_kind += [0] * len(ids)


def hf_forward(model: torch.nn.Module) -> Forward:
    """The Forward of a transformers causal LM (or anything with the same call signature)."""

    def forward(
        ids: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor, cache: DynamicCache, last_only: bool
    ) -> torch.Tensor:
        out = model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=pos,
            cache=cache,
            use_cache=True,
            logits_to_keep=1 if last_only else 0,
        )
        return out.logits

    return forward


class Sampler:
    """Temperature / top-p sampling; greedy when `greedy`.

    Each episode draws from its own seeded generator, so what an episode samples does not depend
    on which other episodes share its batch (or on sub-batching).
    """

    def __init__(self, params: RolloutParams, seeds: Sequence[int], greedy: bool = False) -> None:
        self.temperature, self.top_p, self.greedy = params.temperature, params.top_p, greedy
        self.generators = [torch.Generator().manual_seed(int(s)) for s in seeds]

    def __call__(
        self, logits: torch.Tensor, episodes: Sequence[int], allowed: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """logits (B, V) of the given episodes -> sampled ids (B,), their log-probs (B,) under the
        temperature-scaled softmax, restricted to `allowed` (B, V) bool when given."""
        logits = logits.float()
        if allowed is not None:
            logits = logits.masked_fill(~allowed.to(logits.device), float("-inf"))
        logp = torch.log_softmax(logits / (1.0 if self.greedy else self.temperature), dim=-1)  # (B, V)
        if self.greedy:
            ids = logp.argmax(dim=-1)
        else:
            probs = logp.exp()
            if self.top_p < 1.0:
                probs = _top_p(probs, self.top_p)
            # Inverse CDF: one uniform per row (multinomial drew V randoms per row: 5x slower here).
            cdf = probs.cumsum(dim=-1)  # (B, V)
            u = torch.cat([torch.rand(1, generator=self.generators[e]) for e in episodes])[:, None]  # (B, 1)
            u = u.to(cdf.device)  # CPU generators: the same draws on any device
            ids = (
                torch.searchsorted(cdf, u * cdf[:, -1:], right=True)
                .squeeze(-1)
                .clamp(max=probs.shape[-1] - 1)
            )
        return ids, logp.gather(-1, ids[:, None]).squeeze(-1)


def _top_p(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Keep the smallest set of most likely tokens whose mass reaches top_p (nucleus sampling)."""
    sorted_p, order = probs.sort(dim=-1, descending=True)  # (B, V)
    drop = sorted_p.cumsum(-1) - sorted_p > top_p  # mass before a token already reaches top_p
    sorted_p = sorted_p.masked_fill(drop, 0.0)
    return torch.zeros_like(probs).scatter(-1, order, sorted_p)


class _Batch:
    """The running episodes' shared state: the cache, the attention mask and next positions."""

    def __init__(self, rows: list[int], cache: KVCache) -> None:
        self.rows = rows  # env index of each batch row
        self.cache = cache
        self.mask = torch.zeros(len(rows), 0, dtype=torch.long)  # (B, T_total)
        self.next_pos = torch.zeros(len(rows), dtype=torch.long)  # (B,)

    def feed(self, forward: Forward, chunks: list[list[int]], pad_id: int) -> torch.Tensor:
        """Feed one left-padded chunk per row; returns each row's last logits (B, V)."""
        width = max(len(c) for c in chunks)
        ids = torch.full((len(chunks), width), pad_id, dtype=torch.long)  # (B, T)
        chunk_mask = torch.zeros(len(chunks), width, dtype=torch.long)  # (B, T)
        for r, c in enumerate(chunks):
            if c:
                ids[r, width - len(c) :] = torch.tensor(c)
                chunk_mask[r, width - len(c) :] = 1
        pos = self.next_pos[:, None] + (chunk_mask.cumsum(-1) - 1).clamp(min=0)  # (B, T)
        self.mask = torch.cat([self.mask, chunk_mask], dim=1)
        self.next_pos = self.next_pos + chunk_mask.sum(-1)
        logits = forward(ids, self.mask, pos, self.cache, True)  # (B, 1, V)
        return logits[:, -1, :]

    def feed_prompts(self, forward: Forward, prompts: list[list[int]], pad_id: int) -> torch.Tensor:
        """Feed every row's prompt; the prefix they all share (system prompt, tools) is encoded
        once and its cache copied to every row. Returns each row's last logits (B, V)."""
        shared = 0
        shortest = min(len(p) for p in prompts)
        while shared < shortest - 1 and all(p[shared] == prompts[0][shared] for p in prompts):
            shared += 1  # every row keeps at least one token of its own to feed
        if len(prompts) == 1 or shared < 2:
            return self.feed(forward, prompts, pad_id)
        rows, self.rows = self.rows, self.rows[:1]
        self.mask, self.next_pos = self.mask[:1], self.next_pos[:1]
        self.feed(forward, [prompts[0][:shared]], pad_id)
        self.cache.expand(len(rows))
        self.rows = rows
        self.mask, self.next_pos = self.mask.repeat(len(rows), 1), self.next_pos.repeat(len(rows))
        return self.feed(forward, [p[shared:] for p in prompts], pad_id)

    def compact(self, keep: list[int]) -> _Batch:
        """A sub-batch of the rows `keep` (copied), to decode without the rows that are idle."""
        index = torch.tensor(keep, dtype=torch.long)
        sub = _Batch([self.rows[k] for k in keep], self.cache.rows_copy(index))
        sub.mask, sub.next_pos = self.mask[index], self.next_pos[index]
        return sub

    def absorb(self, sub: _Batch, keep: list[int]) -> None:
        """Merge back a sub-batch made by `compact(keep)` after it decoded further."""
        index = torch.tensor(keep, dtype=torch.long)
        self.cache.absorb(sub.cache, index)
        grown = sub.mask.shape[1] - self.mask.shape[1]
        extra = torch.zeros(len(self.rows), grown, dtype=torch.long)
        extra[index] = sub.mask[:, self.mask.shape[1] :]
        self.mask = torch.cat([self.mask, extra], dim=1)
        self.next_pos[index] = sub.next_pos

    def keep(self, keep: list[int]) -> None:
        """Drop the rows not in `keep` (indices into the current rows)."""
        index = torch.tensor(keep, dtype=torch.long)
        self.cache.keep(index)
        self.mask, self.next_pos = self.mask[index], self.next_pos[index]
        self.rows = [self.rows[k] for k in keep]


class RolloutEngine:
    """Plays every episode of a VecEnv to its end with one batched, cached model.

    `decoder` is a `Qwen2Decoder` snapshot of the policy (build a new one after the weights change);
    with `trie` (`constrained.call_trie`) every turn is one of its valid calls."""

    def __init__(
        self, decoder: Qwen2Decoder, codec: Any, params: RolloutParams, trie: CallTrie | None = None
    ) -> None:
        self.decoder, self.codec, self.params, self.trie = decoder, codec, params, trie
        self.forward: Forward = decoder
        self.compactions = 0  # sub-batches made (diagnostics)

    @torch.inference_mode()
    def run(
        self, vec: VecEnv, seed: int, greedy: bool = False, episode_seeds: Sequence[int] | None = None
    ) -> list[Trajectory]:
        """Play every episode to its end. Episode i samples from seed `episode_seeds[i]`
        (default: derived from `seed` and i)."""
        seeds = (
            episode_seeds if episode_seeds is not None else [seed * 1_000_003 + i for i in range(len(vec))]
        )
        sample = Sampler(self.params, seeds, greedy)
        messages = vec.reset()
        trajs = [self._start(env.task.instance_id, m) for env, m in zip(vec.envs, messages)]
        static = self.params.kv_cache == "static"
        batch = _Batch(
            list(range(len(trajs))),
            self.decoder.new_cache(self.params.max_tokens_per_episode if static else None),
        )
        logits = batch.feed_prompts(self.forward, [t.token_ids for t in trajs], self.codec.pad_id)
        while batch.rows:
            turns, stops, pending = self._turn(batch, logits, trajs, sample)
            texts: list[str | None] = [None] * len(trajs)
            for row, env_i in enumerate(batch.rows):
                texts[env_i] = self.codec.decode(turns[row])
            results = vec.step(texts)
            logits = self._observe(vec, batch, trajs, results, stops, pending)
        for traj, env in zip(trajs, vec.envs):
            traj.turn_rewards = list(env.per_turn_rewards)
            traj.terminal_reward = float(env.terminal_reward)
            traj.metrics = {**env.metrics.to_json(), "tokens": sum(traj.response_mask)}
        return trajs

    def _start(self, instance_id: str, messages: list[dict[str, Any]]) -> Trajectory:
        ids = self.codec.prompt_ids(messages)
        traj = Trajectory(instance_id, [], [], [], [], prompt_len=len(ids))
        traj.append(ids, policy=False)
        traj.tool_mask = [0] * len(ids)  # the prompt is neither policy nor environment feedback
        return traj

    def _turn(
        self, batch: _Batch, logits: torch.Tensor, trajs: list[Trajectory], sample: Sampler
    ) -> tuple[list[list[int]], list[int | None], list[list[int]]]:
        """Sample one assistant turn for every running row, in lockstep.

        Returns each row's sampled ids, the stop token it ended on (None: cut by a limit), and
        the ids sampled last but not yet fed to the model (fed with the observation)."""
        n = len(batch.rows)
        limits = [
            min(
                self.params.max_new_tokens_per_turn,
                self.params.max_tokens_per_episode - len(trajs[e].token_ids),
            )
            for e in batch.rows
        ]
        turns: list[list[int]] = [[] for _ in range(n)]
        lps: list[list[float]] = [[] for _ in range(n)]
        stops: list[int | None] = [None] * n
        live = [limits[r] > 0 for r in range(n)]
        last: list[list[int]] = [[] for _ in range(n)]  # sampled last, not yet fed
        stack: list[tuple[_Batch, list[int]]] = []  # (batch, its rows) before each compaction
        active, rows = batch, list(range(n))  # the batch being decoded and its rows (of `batch`)
        while any(live[r] for r in rows):
            drawing = [j for j, r in enumerate(rows) if live[r]]  # idle rows draw nothing
            allowed = (
                self.trie.mask([turns[rows[j]] for j in drawing], logits.shape[-1]) if self.trie else None
            )
            ids, lp = sample(
                logits[drawing], [batch.rows[rows[j]] for j in drawing], allowed
            )  # (B_live,) each
            drawn = {j: (int(ids[k]), float(lp[k])) for k, j in enumerate(drawing)}
            step = []
            for j, r in enumerate(rows):
                if not live[r]:
                    step.append([])  # fed as padding: masked out, position unchanged
                    continue
                tok, logprob = drawn[j]
                turns[r].append(tok)
                lps[r].append(logprob)
                step.append([tok])
                last[r] = [tok]
                if tok in self.codec.stop_ids:
                    stops[r], live[r] = tok, False
                elif len(turns[r]) >= limits[r]:
                    live[r] = False
            still = [j for j, r in enumerate(rows) if live[r]]
            if not still:
                break
            if len(still) <= 3 * len(rows) // 4:  # many rows idle: decode the rest in a smaller batch
                stack.append((active, rows))
                self.compactions += 1
                active, rows = active.compact(still), [rows[j] for j in still]
                step = [step[j] for j in still]
            for j, r in enumerate(rows):
                if step[j]:
                    last[r] = []
            logits = active.feed(self.forward, step, self.codec.pad_id)
        while stack:  # merge the sub-batches back, innermost first
            parent, parent_rows = stack.pop()
            parent.absorb(active, [parent_rows.index(r) for r in rows])
            active, rows = parent, parent_rows
        for r, env_i in enumerate(batch.rows):
            start = len(trajs[env_i].token_ids)
            trajs[env_i].append(turns[r], policy=True, logprobs=lps[r])
            trajs[env_i].turn_spans.append((start, start + len(turns[r])))
            trajs[env_i].decision_kind[start:] = decision_flags(self.codec, turns[r])
        return turns, stops, last

    def _observe(
        self,
        vec: VecEnv,
        batch: _Batch,
        trajs: list[Trajectory],
        results: list[Any],
        stops: list[int | None],
        pending: list[list[int]],
    ) -> torch.Tensor:
        """Append each running episode's observation; end the finished and the out-of-budget."""
        chunks: dict[int, list[int]] = {}
        out_of_budget = []
        for row, env_i in enumerate(batch.rows):
            if results[env_i].done:
                continue
            obs = self.codec.observation_ids(results[env_i].observation, stops[row])
            if len(trajs[env_i].token_ids) + len(obs) + 1 > self.params.max_tokens_per_episode:
                out_of_budget.append(env_i)  # no room for the observation and one more token
                continue
            chunks[row] = obs
        if out_of_budget:
            vec.truncate(out_of_budget)
        keep = [row for row in range(len(batch.rows)) if row in chunks]
        if not keep:
            batch.rows = []
            return torch.empty(0)
        batch.keep(keep)
        batch.mask = batch.cache.repack(batch.mask)
        for row, env_i in enumerate(batch.rows):
            trajs[env_i].append(chunks[keep[row]], policy=False)
        return batch.feed(self.forward, [pending[k] + chunks[k] for k in keep], self.codec.pad_id)


@torch.no_grad()
def teacher_forced_logprobs(forward: Forward, token_ids: Sequence[int], temperature: float) -> torch.Tensor:
    """Log-prob of each token given all before it (first entry 0), one unpadded pass: (T,)."""
    ids = torch.tensor([list(token_ids)], dtype=torch.long)  # (1, T)
    mask = torch.ones_like(ids)
    pos = torch.arange(ids.shape[1])[None, :]
    logits = forward(ids, mask, pos, DynamicCache(), False)  # (1, T, V)
    logp = torch.log_softmax(logits[0, :-1].float() / temperature, dim=-1)  # (T-1, V)
    out = logp.gather(-1, ids[0, 1:, None]).squeeze(-1)  # (T-1,)
    return torch.cat([torch.zeros(1), out])
