"""benchmarks/post_revert_choice.py: the decisive choice (the apply right after a revert) is found
in a trajectory, with the token that spells its id; turns that are not that choice are skipped."""

from __future__ import annotations

from conftest import load_benchmark
from pappo.env.protocol import format_tool_call
from pappo.policy.rollout import Trajectory


def load_bench():
    return load_benchmark("post_revert_choice")


class CharTok:
    """One token per character."""

    def decode(self, ids):
        return "".join(chr(i) for i in ids)


def trajectory(turns: list[str]) -> Trajectory:
    t = Trajectory(instance_id="x", token_ids=[], logprobs=[], response_mask=[], tool_mask=[], prompt_len=0)
    for text in turns:
        t.append([ord(c) for c in "<obs>"], policy=False)
        start = len(t.token_ids)
        t.append([ord(c) for c in text], policy=True)
        t.turn_spans.append((start, len(t.token_ids)))
    return t


def test_the_apply_after_a_revert_is_found_with_its_id_token():
    def call(name, **a):
        return format_tool_call(name, a, mode="candidates")

    t = trajectory(
        [
            call("apply", id=3),
            call("run_tests"),
            call("revert"),
            call("apply", id=3),
            call("revert"),
            "not a call",
            call("apply", id=12),
            call("revert"),
            call("apply", id=4),
        ]
    )
    found = load_bench().decisions(CharTok(), t)
    assert [(r, a) for r, a, _ in found] == [
        (3, 3),
        (12, 4),
    ]  # after "not a call", no apply follows its revert
    for _, applied, pos in found:  # the id's first token (decisions.decision_flags, kind ARG)
        assert (
            chr(t.token_ids[pos]) == str(applied)[0]
            and "".join(map(chr, t.token_ids[pos - 6 : pos])) == '"id": '
        )
