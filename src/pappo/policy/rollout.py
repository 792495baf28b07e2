"""Batched multi-turn rollouts: B episodes advance in lockstep with one KV cache across turns.

Shapes: B episodes still running, T tokens of a sequence, V vocabulary. Each trajectory keeps the
exact token ids fed to the model (prompt, sampled turns, environment observations), the
sampler's log-probs of the sampled ids, `response_mask` (policy tokens) and `tool_mask`
(environment tokens after the prompt), and where each turn starts and ends. Old log-probs for PPO
are these recorded values, never a re-tokenisation of text (the original package's bug, which
made every ratio 1.0).

The cache is never rebuilt: a turn's observation is fed as a left-padded chunk whose padding is
masked out, with positions counted over real tokens only, so each sequence sees exactly what it
would see alone (`decode_batch.DecodeBatch`). Finished episodes are dropped from the batch. The model runs
through `decoder.Qwen2Decoder`, a lean inference forward; the transformers forward serves training.
Log-probs are of the full temperature-scaled distribution (top-p only shapes what is sampled),
as in verl; `teacher_forced_logprobs` recomputes them from the ids for the check. With a call
trie (`rollout.calls: constrained`) the distribution is restricted to what may follow the turn's
prefix: a forced token gets log-prob 0, a choice the softmax over its options.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import DynamicCache

from pappo.config.policy import RolloutParams
from pappo.env.vec import VecEnv
from pappo.io import PappoError
from pappo.policy.constrained import CallTrie
from pappo.policy.decisions import decision_flags
from pappo.policy.decode_batch import DecodeBatch, Forward
from pappo.policy.decoder import Qwen2Decoder
from pappo.policy.sampler import Sampler


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


class RolloutEngine:
    """Plays every episode of a VecEnv to its end with one batched, cached model.

    `decoder` is a `Qwen2Decoder` snapshot of the policy (build a new one after the weights change);
    with `trie` (`constrained.call_trie`) every turn is one of its valid calls."""

    def __init__(
        self, decoder: Qwen2Decoder, codec: Any, params: RolloutParams, trie: CallTrie | None = None
    ) -> None:
        self.decoder, self.codec, self.params, self.trie = decoder, codec, params, trie
        self.lead = trie.lead if trie is not None else []  # fed with the observation (`_leads`)
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
        self._check_room(trajs)
        static = self.params.kv_cache == "static"
        limit = self.params.max_tokens_per_episode
        batch = DecodeBatch(
            list(range(len(trajs))),
            self.decoder.new_cache(limit if static else None),
            self.decoder.device,
            limit,
        )
        led = [self._leads(len(t.token_ids)) for t in trajs]
        prompts = [t.token_ids + (self.lead if ok else []) for t, ok in zip(trajs, led)]
        logits = batch.feed_prompts(self.forward, prompts, self.codec.pad_id)
        while batch.rows:
            turns, stops, pending = self._turn(batch, logits, trajs, sample, led)
            texts: list[str | None] = [None] * len(trajs)
            for row, env_i in enumerate(batch.rows):
                texts[env_i] = self.codec.decode(turns[row])
            results = vec.step(texts)
            logits, led = self._observe(vec, batch, trajs, results, stops, pending)
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

    def _check_room(self, trajs: list[Trajectory]) -> None:
        """Refuse episodes whose prompt leaves no room for a sampled token: played on, each would
        be an empty turn the environment counts, an episode longer than the limit the trainer and
        the memory model assume, and a static cache grown past its size (verl's default for an
        overlong prompt is an error too: data.truncation "error")."""
        limit = self.params.max_tokens_per_episode
        over = [(t.instance_id, len(t.token_ids)) for t in trajs if len(t.token_ids) >= limit]
        if over:
            tasks = ", ".join(f"{task} ({n} tokens)" for task, n in over[:5])
            more = f" and {len(over) - 5} more" if len(over) > 5 else ""
            raise PappoError(
                f"{len(over)} task prompt(s) leave no room for a turn within rollout.max_tokens_per_episode "
                f"{limit}: {tasks}{more}. Raise rollout.max_tokens_per_episode in the params file to "
                f"at least {max(n for _, n in over) + 1}, or leave these tasks out."
            )

    def _leads(self, length: int) -> bool:
        """Whether a turn starting after `length` ids is fed its call's forced start (`self.lead`)
        with what precedes it: only where forcing it token by token would not reach a limit, so
        the turn is the same either way."""
        n = len(self.lead)
        return 0 < n < self.params.max_new_tokens_per_turn and length + n < self.params.max_tokens_per_episode

    def _turn(
        self,
        batch: DecodeBatch,
        logits: torch.Tensor,
        trajs: list[Trajectory],
        sample: Sampler,
        led: list[bool],
    ) -> tuple[list[list[int]], list[int | None], list[list[int]]]:
        """Sample one assistant turn for every running row, in lockstep; `led[r]`: row r was fed the
        call's forced start already and its logits are for the token after it (constrained calls).

        Returns each row's sampled ids, the stop token it ended on (None: cut by a limit), and
        the ids sampled last but not yet fed to the model (fed with the observation)."""
        if self.trie is not None:
            return self._call_turn(batch, logits, trajs, sample, led)
        n = len(batch.rows)
        limits, turns, lps, stops, live = self._turn_state(batch, trajs)
        last: list[list[int]] = [[] for _ in range(n)]  # sampled last, not yet fed
        stack: list[tuple[DecodeBatch, list[int]]] = []  # (batch, its rows) before each compaction
        active, rows = batch, list(range(n))  # the batch being decoded and its rows (of `batch`)
        while any(live[r] for r in rows):
            drawing = [j for j, r in enumerate(rows) if live[r]]  # idle rows draw nothing
            ids, lp = sample(logits[drawing], [batch.rows[rows[j]] for j in drawing])  # (B_live,) each
            drawn = dict(zip(drawing, zip(ids.tolist(), lp.tolist())))  # one copy from the device each
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
            # many rows idle, or idle rows in the way of the batch's limit (`DecodeBatch.limit`): decode
            # the rest in a smaller batch
            if len(still) <= 3 * len(rows) // 4 or (len(still) < len(rows) and not active.fits(1)):
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
        self._record(batch, trajs, turns, lps)
        return turns, stops, last

    def _call_turn(
        self,
        batch: DecodeBatch,
        logits: torch.Tensor,
        trajs: list[Trajectory],
        sample: Sampler,
        led: list[bool],
    ) -> tuple[list[list[int]], list[int | None], list[list[int]]]:
        """`_turn` with the call trie: a token the trie forces is appended without a forward (log-prob
        0; a sampling row still draws its uniform, so each later choice draws what token-by-token
        decoding would). The model runs only when every running row waits at a choice (the tool,
        the id), fed what each appended since its last forward: a turn costs one or two forwards,
        not one a token. Rows that have ended leave their unfed ids for the observation."""
        assert self.trie is not None
        n = len(batch.rows)
        limits, turns, lps, stops, live = self._turn_state(batch, trajs)
        unfed: list[list[int]] = [[] for _ in range(n)]  # appended, not yet fed to the model
        current = logits  # (n, V): row r's next-token logits while unfed[r] is empty

        def take(r: int, tok: int, logprob: float) -> None:
            turns[r].append(tok)
            lps[r].append(logprob)
            unfed[r].append(tok)
            if tok in self.codec.stop_ids:
                stops[r], live[r] = tok, False
            elif len(turns[r]) >= limits[r]:
                live[r] = False

        for r in range(n):
            if led[r]:  # fed with the observation: appended as forced, nothing left to feed
                for tok in self.lead:
                    sample.skip(batch.rows[r])
                    take(r, tok, 0.0)
                unfed[r] = []
        while True:
            for r in range(n):
                while live[r] and len(kids := self.trie.allowed(turns[r])) == 1:
                    sample.skip(batch.rows[r])
                    take(r, kids[0], 0.0)
            ready = [r for r in range(n) if live[r] and not unfed[r]]
            if ready:  # at a choice, with logits for it
                allowed = self.trie.mask([turns[r] for r in ready], current.shape[-1])
                ids, lp = sample(current[ready], [batch.rows[r] for r in ready], allowed)  # (B_ready,)
                for r, tok, logprob in zip(ready, ids.tolist(), lp.tolist()):
                    take(r, tok, logprob)
                continue
            waiting = [r for r in range(n) if live[r]]
            if not waiting:
                break
            fed = batch.feed(self.forward, [unfed[r] if live[r] else [] for r in range(n)], self.codec.pad_id)
            current = current.clone()
            current[waiting] = fed[waiting]
            for r in waiting:
                unfed[r] = []
        self._record(batch, trajs, turns, lps)
        return turns, stops, unfed

    def _turn_state(
        self, batch: DecodeBatch, trajs: list[Trajectory]
    ) -> tuple[list[int], list[list[int]], list[list[float]], list[int | None], list[bool]]:
        """A turn's start, per running row: its room (the turn limit, or what the episode has left),
        ids and log-probs drawn (none yet), stop token (None yet), and whether it is still live."""
        limits = [
            min(
                self.params.max_new_tokens_per_turn,
                self.params.max_tokens_per_episode - len(trajs[e].token_ids),
            )
            for e in batch.rows
        ]
        n = len(limits)
        return (
            limits,
            [[] for _ in range(n)],
            [[] for _ in range(n)],
            [None] * n,
            [room > 0 for room in limits],
        )

    def _record(
        self, batch: DecodeBatch, trajs: list[Trajectory], turns: list[list[int]], lps: list[list[float]]
    ) -> None:
        """Append each running row's turn to its trajectory: ids, log-probs, span, decision kinds."""
        for r, env_i in enumerate(batch.rows):
            start = len(trajs[env_i].token_ids)
            trajs[env_i].append(turns[r], policy=True, logprobs=lps[r])
            trajs[env_i].turn_spans.append((start, start + len(turns[r])))
            trajs[env_i].decision_kind[start:] = decision_flags(self.codec, turns[r])

    def _observe(
        self,
        vec: VecEnv,
        batch: DecodeBatch,
        trajs: list[Trajectory],
        results: list[Any],
        stops: list[int | None],
        pending: list[list[int]],
    ) -> tuple[torch.Tensor, list[bool]]:
        """Append each running episode's observation; end the finished and the out-of-budget.
        Returns the kept rows' logits and whether each was fed the next call's start (`_leads`)."""
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
            return torch.empty(0), []
        batch.keep(keep)
        batch.repack()
        for row, env_i in enumerate(batch.rows):
            trajs[env_i].append(chunks[keep[row]], policy=False)
        led = [self._leads(len(trajs[env_i].token_ids)) for env_i in batch.rows]
        fed = [pending[k] + chunks[k] + (self.lead if ok else []) for k, ok in zip(keep, led)]
        return batch.feed_split(self.forward, fed, self.codec.pad_id), led


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
