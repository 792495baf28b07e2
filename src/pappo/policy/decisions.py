"""Which sampled tokens are the agent's choices, and the options each choice is made among.

A turn's choices are the values of its tool call (`protocol.decision_spans`): the tool name and
each argument value. `decision_flags` marks a turn's tokens by kind: `NAME` (the first token of the
name value), `ARG` (the first token of an argument value), `INSIDE` (the value's later tokens) and
0 (thought, tags, keys, punctuation: format). In candidates mode the options are finite, so
`choice_tokens` lists, per kind, the first tokens of every valid call as the codec encodes it (the
tool names; the candidate ids 1..k). The trainer then takes a choice's log-prob under the softmax
restricted to those options (`rl.loss_tokens: decisions`): a negative advantage moves probability
to another valid option, never to a malformed call, which is how larger steps broke the format
(docs/changelog.md, 2026-12-02).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from pappo.env.protocol import Mode, decision_spans, format_tool_call, tool_names
from pappo.io import PappoError

NAME, ARG, INSIDE = 1, 2, 3


def decision_flags(codec: Any, ids: Sequence[int]) -> list[int]:
    """The kind of each of a turn's sampled ids (NAME, ARG, INSIDE or 0). Offsets come from
    decoding growing prefixes, so a token's text is exactly what it adds to the decoded turn."""
    ends, text = [], ""
    for i in range(len(ids)):
        text = codec.decode(ids[: i + 1])
        ends.append(len(text))
    spans = decision_spans(text)
    flags, begin = [], 0
    for end in ends:
        kind = 0
        for a, b, key in spans:
            if a < end and begin < b:  # the token overlaps the value
                kind = (NAME if key == "name" else ARG) if begin <= a else INSIDE
                break
        flags.append(kind)
        begin = max(begin, end)
    return flags


def choice_tokens(codec: Any, mode: Mode, k: int) -> dict[int, frozenset[int]]:
    """{NAME: first tokens of the tool names, ARG: first tokens of the ids 1..k}, read from the
    codec's encoding of every valid call of candidates mode; {} in free mode (open-ended values)."""
    if mode != "candidates":
        return {}
    options: dict[int, dict[int, str]] = {NAME: {}, ARG: {}}  # kind -> {first token: the value it opens}
    for name in tool_names(mode):
        calls = [{"id": i} for i in range(1, k + 1)] if name in ("apply", "view") else [{}]
        for args in calls:
            ids = codec.encode(format_tool_call(name, args, mode=mode))
            for tok, kind in zip(ids, decision_flags(codec, ids)):
                if kind not in options:
                    continue
                value = name if kind == NAME else str(args["id"])
                seen = options[kind].setdefault(int(tok), value)
                if seen != value:  # the choice would be made after the first token: not trained
                    raise PappoError(
                        f"the tokenizer spells {seen!r} and {value!r} with the same first token "
                        f"{int(tok)}; rl.loss_tokens 'decisions' needs distinct first tokens (use 'response')"
                    )
    return {kind: frozenset(toks) for kind, toks in options.items()}


def choice_table(choices: dict[int, frozenset[int]], vocab: int) -> torch.Tensor:
    """(3, V) bool: row NAME / ARG marks that kind's options; row 0 is unused (all False)."""
    table = torch.zeros(ARG + 1, vocab, dtype=torch.bool)
    for kind, toks in choices.items():
        table[kind, sorted(toks)] = True
    return table
