"""Constrained decoding of candidates-mode calls (`rollout.calls: constrained`).

Every valid call of candidates mode (apply/view with id 1..k, revert, run_tests, submit) is
encoded once as the codec spells it (no thought; the turn ends on `</tool_call>`), and the token
sequences form a trie. While a turn is sampled, each row may only draw a child of its prefix: where
there is one child the token is forced (log-prob 0: it has probability 1 under the constraint),
where there are several the policy chooses among them under the softmax restricted to them. The
trie's branch points must be the choices `decisions.decision_flags` marks (the first token of the
tool name and of the id), so what the policy samples is exactly what `rl.loss_tokens: decisions`
trains and scores with the same restricted softmax. Why: at larger steps every trained variant
broke the call format through shared weights (docs/changelog.md); here the format is not the
policy's to break, as TextWorld agents choose among the listed commands.
"""

from __future__ import annotations

from typing import Any

import torch

from pappo.config import Params
from pappo.env.protocol import Mode, format_tool_call, tool_names
from pappo.io import PappoError
from pappo.policy.decisions import ARG, NAME, decision_flags


def valid_calls(mode: Mode, k: int) -> list[str]:
    """The text of every valid call of candidates mode with k candidates, no thought."""
    if mode != "candidates":
        raise PappoError(
            f"constrained calls need env.actions 'candidates' (got {mode!r}): free-mode "
            "arguments (paths, code) are open-ended; set rollout.calls: sampled"
        )
    out = []
    for name in tool_names(mode):
        args = [{"id": i} for i in range(1, k + 1)] if name in ("apply", "view") else [{}]
        out += [format_tool_call(name, a, mode=mode) for a in args]
    return out


class CallTrie:
    """The token trie of the valid calls; `allowed(prefix)` lists what may follow a turn's prefix."""

    def __init__(self, codec: Any, mode: Mode, k: int) -> None:
        self.children: dict[tuple[int, ...], list[int]] = {}
        seqs = [codec.encode(text) for text in valid_calls(mode, k)]
        for ids in seqs:
            if not ids or ids[-1] not in codec.stop_ids:
                raise PappoError(
                    f"the codec encodes a call without ending on a stop token ({ids[-3:]}); "
                    "constrained calls need the turn to end on </tool_call>"
                )
            for i, tok in enumerate(ids):
                kids = self.children.setdefault(tuple(ids[:i]), [])
                if tok not in kids:
                    kids.append(tok)
        for ids in seqs:  # the policy may choose only where a choice is trained
            flags = decision_flags(codec, ids)
            for i in range(len(ids)):
                if len(self.children[tuple(ids[:i])]) > 1 and flags[i] not in (NAME, ARG):
                    raise PappoError(
                        f"the tokenizer makes a call's format branch at token {i} of "
                        f"{codec.decode(ids)!r} (not a tool or id choice); use rollout.calls: sampled"
                    )
        self.longest = max(len(ids) for ids in seqs)
        self.lead: list[int] = []  # what every call starts with: forced up to its first choice
        while len(kids := self.allowed(self.lead)) == 1 and kids[0] not in codec.stop_ids:
            self.lead.append(kids[0])

    def allowed(self, prefix: list[int]) -> list[int]:
        """Tokens that may follow `prefix` (a turn's ids so far); [] past the end of a call."""
        return self.children.get(tuple(prefix), [])

    def mask(self, prefixes: list[list[int]], vocab: int) -> torch.Tensor:
        """(B, V) bool: True where row b's prefix may continue with that token."""
        out = torch.zeros(len(prefixes), vocab, dtype=torch.bool)
        for b, prefix in enumerate(prefixes):
            kids = self.allowed(prefix)
            if not kids:
                raise PappoError(f"constrained decoding left the call trie after {prefix}: a bug")
            out[b, kids] = True
        return out


def call_trie(codec: Any, params: Params) -> CallTrie | None:
    """The trie the rollouts are constrained to (`rollout.calls: constrained`), else None."""
    if params.rollout.calls != "constrained":
        return None
    trie = CallTrie(codec, params.env.actions, params.env.candidates.k)
    if trie.longest > params.rollout.max_new_tokens_per_turn:
        raise PappoError(
            f"rollout.max_new_tokens_per_turn {params.rollout.max_new_tokens_per_turn} is shorter "
            f"than the longest constrained call ({trie.longest} tokens); raise it"
        )
    return trie
