"""The agent's choices in a sampled turn, and the options each is made among (rl.loss_tokens: decisions)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pappo.env.protocol import format_tool_call, tool_names, tools_for
from pappo.io import PappoError
from pappo.policy.chat import ChatCodec
from pappo.policy.decisions import ARG, NAME, choice_table, choice_tokens, decision_flags
from pappo.policy.rollout import Trajectory
from pappo.policy.tokenizer import corpus_files, train_tokenizer
from pappo.rl.batch import from_trajectories

WARMUP = Path(__file__).resolve().parents[1] / "data" / "warmup" / "repos"


@pytest.fixture(scope="module")
def codec() -> ChatCodec:
    return ChatCodec(train_tokenizer(corpus_files(WARMUP, max_bytes=200_000), 600), tools_for("candidates"))


def test_every_valid_call_opens_its_choices_with_an_option(codec: ChatCodec):
    """Each tool name and each id 1..k has its own first token; a valid call's choices are exactly
    those tokens (the name's, then the id's), whatever its thought says."""
    k = 4
    choices = choice_tokens(codec, "candidates", k)
    assert len(choices[NAME]) == len(tool_names("candidates")) and len(choices[ARG]) == k
    for name in tool_names("candidates"):
        for args in [{"id": i} for i in range(1, k + 1)] if name in ("apply", "view") else [{}]:
            ids = codec.encode(format_tool_call(name, args, "Try candidate 2.", mode="candidates"))
            opened = [
                (kind, tok) for tok, kind in zip(ids, decision_flags(codec, ids)) if kind in (NAME, ARG)
            ]
            assert [kind for kind, _ in opened] == [NAME] + [ARG] * len(args)
            assert all(tok in choices[kind] for kind, tok in opened)
    assert choice_tokens(codec, "free", k) == {}  # open-ended values: no finite options


def test_a_tokenizer_that_shares_a_first_token_is_refused(codec: ChatCodec):
    """k = 12: ids 1 and 10-12 start with the same token, so the choice would not be trained."""
    with pytest.raises(PappoError, match="same first token"):
        choice_tokens(codec, "candidates", 12)


def test_a_choice_is_made_among_its_options_only(codec: ChatCodec):
    """In the batch, a choice is the first token of a value that is one of its kind's options; a
    malformed value (an id that is not an option) is format, not a choice."""
    table = choice_table(choice_tokens(codec, "candidates", 4), len(codec.tokenizer))
    good = codec.encode(format_tool_call("apply", {"id": 3}, mode="candidates"))
    bad = codec.encode(format_tool_call("apply", {"id": 7}, mode="candidates"))
    trajs = []
    for turn in (good, bad):
        t = Trajectory("t", [], [], [], [], prompt_len=1)
        t.append([codec.pad_id], policy=False)
        t.append(turn, policy=True, logprobs=[0.0] * len(turn))
        t.decision_kind[1:] = decision_flags(codec, turn)
        t.turn_spans, t.turn_rewards = [(1, 1 + len(turn))], [0.0]
        trajs.append(t)
    batch = from_trajectories(trajs, [0, 0], codec.pad_id, choices=table)
    assert batch.decision_mask[0].sum() == 2 and batch.decision_mask[1].sum() == 1  # id 7: not an option
    assert set(batch.choice_row[0][batch.decision_mask[0].bool()].tolist()) == {NAME, ARG}
    assert torch.equal(batch.choice_row != 0, batch.decision_mask.bool())
    free = from_trajectories(trajs, [0, 0], codec.pad_id)  # no table: every token of a value
    assert free.decision_mask[0].sum() > 2 and (free.choice_row == 0).all()
