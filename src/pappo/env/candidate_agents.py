"""Scripted agents of the candidates action mode (env/candidate_board.py), Hermes turns as a model writes them.

- `CandidateOracle`: apply the fix, run_tests, submit (knows `CandidateBoard.correct_id`).
- `RandomCandidateAgent`: each turn, a tool drawn uniformly from the valid ones (apply when none
  is applied, revert when one is, view, run_tests, submit), then a uniform candidate id.
- `SystematicAgent`: apply [1], run_tests, submit if they pass, else revert and go on with [2]...
  It knows nothing about the candidates: what it finds depends on the turn budget.
- `NoisyCandidateAgent`: the oracle's script with seeded mistakes, for demonstrations.
- `Thoughtless`: another agent's turns without their thought, as constrained decoding writes them.
Each is deterministic given its seed; the stateful ones are one instance per episode.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from pappo.env.agents import Agent, SubmitAgent
from pappo.env.episode import RepairEnv
from pappo.env.protocol import ParseError, format_tool_call, parse_tool_call
from pappo.io import PappoError

PASS_MARK = "All tests pass"  # what summarize_tests says when every graded test passed
AGENTS = ("oracle", "random", "systematic", "noisy", "submit")


def call(name: str, arguments: dict[str, Any] | None = None, thought: str = "") -> str:
    return format_tool_call(name, arguments, thought, mode="candidates")


def last_tool_text(messages: Sequence[dict[str, Any]], name: str) -> str | None:
    """Content of the latest tool message of `name` (None if that tool was not called)."""
    for m in reversed(messages):
        if m.get("role") == "tool" and m.get("name") == name:
            return str(m.get("content", ""))
    return None


def board_of(env: RepairEnv) -> tuple[int, int]:
    """(k shown, the fix's id) of a reset candidates-mode env."""
    board = getattr(env, "board", None)
    if board is None:
        raise PappoError(f"{env.task.instance_id}: not a reset candidates-mode env (env.actions: candidates)")
    return len(board), board.correct_id


class CandidateOracle:
    """apply(fix), run_tests, submit."""

    def __init__(self, correct_id: int) -> None:
        self.plan = [
            call("apply", {"id": correct_id}, f"Candidate {correct_id} fixes the failure."),
            call("run_tests", {}, "Check the fix."),
            call("submit", {}, "The tests pass; submit."),
        ]

    def act(self, messages: Sequence[dict[str, Any]]) -> str:
        k = sum(1 for m in messages if m.get("role") == "assistant")
        return self.plan[k] if k < len(self.plan) else call("submit")


class RandomCandidateAgent:
    """A uniformly random valid call each turn (tool first, then id); tracks what it applied."""

    def __init__(self, k: int, seed: int = 0) -> None:
        self.k, self._rng, self._applied = k, random.Random(f"random-agent:{seed}"), False

    def act(self, messages: Sequence[dict[str, Any]]) -> str:
        name = self._rng.choice(["revert" if self._applied else "apply", "view", "run_tests", "submit"])
        self._applied = (self._applied or name == "apply") and name != "revert"
        if name in ("apply", "view"):
            return call(name, {"id": self._rng.randint(1, self.k)})
        return call(name)


class SystematicAgent:
    """Tries the candidates in the order shown: apply, run_tests, submit on a pass, else revert, next."""

    def __init__(self, k: int) -> None:
        self.k, self._next, self._phase = k, 1, "apply"

    def act(self, messages: Sequence[dict[str, Any]]) -> str:
        if self._phase == "apply":
            i = self._next
            self._next += 1
            last = i >= self.k  # every other candidate failed: this one needs no test
            self._phase = "submit" if last else "test"
            return call("apply", {"id": i}, f"Try candidate {i}.")
        if self._phase == "test":
            self._phase = "judge"
            return call("run_tests", {}, "Does it fix the failure?")
        if self._phase == "judge" and PASS_MARK not in (last_tool_text(messages, "run_tests") or ""):
            self._phase = "apply"
            return call("revert", {}, "It does not; undo it.")
        return call("submit", {}, "The tests pass; submit.")


class NoisyCandidateAgent:
    """The oracle's script with seeded mistakes (deterministic given `seed`; one per episode).

    Before the fix, with p_wrong_edit a wrong candidate is applied, tested and reverted (drawn
    again after each, so several may come first); with p_failed_edit an apply that cannot be made
    (an id not shown, or a second apply before the revert). After run_tests, with p_repeated_test,
    run_tests again. Before each turn, with p_parse_error, an unparsable turn instead."""

    def __init__(
        self,
        correct_id: int,
        k: int,
        seed: int = 0,
        p_wrong_edit: float = 0.3,
        p_failed_edit: float = 0.1,
        p_repeated_test: float = 0.1,
        p_parse_error: float = 0.05,
    ) -> None:
        self.correct, self.k = correct_id, k
        self.p = {
            "wrong": p_wrong_edit,
            "failed": p_failed_edit,
            "repeat": p_repeated_test,
            "parse": p_parse_error,
        }
        self._rng = random.Random(f"noisy-candidates:{seed}")
        self._queue: list[str] = []
        self._wrong = [i for i in range(1, k + 1) if i != correct_id]
        self._rng.shuffle(self._wrong)
        self._fixed = False

    def act(self, messages: Sequence[dict[str, Any]]) -> str:
        if self._rng.random() < self.p["parse"]:
            return self._rng.choice(
                [
                    "I should look at the candidates first.",
                    '<tool_call>\n{"name": "apply", "arguments": {"id": }}\n</tool_call>',
                ]
            )
        if not self._queue:
            self._queue = self._plan()
        return self._queue.pop(0)

    def _plan(self) -> list[str]:
        if self._fixed:
            return [call("submit", {}, "The tests pass; submit.")]
        if self._wrong and self._rng.random() < self.p["wrong"]:
            i = self._wrong.pop()
            steps = [call("apply", {"id": i}, f"Try candidate {i}."), call("run_tests", {}, "Does it help?")]
            if self._rng.random() < self.p["failed"]:  # applying again before reverting
                steps.append(call("apply", {"id": self.correct}, f"Try candidate {self.correct}."))
            return steps + [call("revert", {}, "It does not; undo it.")]
        steps = []
        if self._rng.random() < self.p["failed"]:
            steps.append(call("apply", {"id": self.k + 1 + self._rng.randrange(3)}, "Apply the last one."))
        self._fixed = True
        steps += [
            call("apply", {"id": self.correct}, f"Candidate {self.correct} fixes it."),
            call("run_tests", {}, "Check the fix."),
        ]
        if self._rng.random() < self.p["repeat"]:
            steps.append(call("run_tests", {}, "Run them again to be sure."))
        return steps


def make_candidate_agent(name: str, env: RepairEnv, seed: int = 0) -> Agent:
    """The named agent (AGENTS) for a reset candidates-mode env; `seed` seeds random and noisy."""
    k, correct = board_of(env)
    if name == "oracle":
        return CandidateOracle(correct)
    if name == "random":
        return RandomCandidateAgent(k, seed)
    if name == "systematic":
        return SystematicAgent(k)
    if name == "noisy":
        return NoisyCandidateAgent(correct, k, seed)
    if name == "submit":
        return SubmitAgent()
    raise PappoError(f"unknown candidates-mode agent {name!r}; choose one of {', '.join(AGENTS)}")


class Thoughtless:
    """`agent`'s turns with the thought left out (an unparsable turn is kept as it is): the turns
    constrained decoding writes (`rollout.calls: constrained`), so that demonstrations teach the
    choice where the policy makes it, at the call itself."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def act(self, messages: Sequence[dict[str, Any]]) -> str:
        text = self.agent.act(messages)
        parsed = parse_tool_call(text, mode="candidates")
        return text if isinstance(parsed, ParseError) else call(parsed.name, parsed.arguments)
