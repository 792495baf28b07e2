"""One repair episode: tool calls in, observations, per-turn rewards and metrics out.

Grading is split from stepping so that many episodes can share one call to the sandbox pool:
`begin_step(text)` applies the turn and returns the grade requests it needs (zero or one),
`end_step(grades)` takes their grades and finishes the turn. `reset` is split the same way
(its request grades the buggy tree, for `initial_failing`). `reset()` and `step(text)` do both
halves with the env's own `grade_fn`; `VecEnv` batches the halves of many envs.

Grades are memoised by tree content: the tests are validated deterministic, so a tree is
graded once per episode (run_tests right after an edit, or submit right after run_tests,
reuse the grade already taken). Grades with an `infra_error` are never reused.

An `infra_error` in any grade marks the episode; its rewards are kept as computed (an
unknown progress counts 0) and trainers drop such episodes from rewards and statistics.

`params.actions` picks the action mode (env/protocol.py). In `candidates` mode the env needs the
task's candidate edits and an episode seed (their shown order, env/candidate_board.py); the first
user turn is the failing tests' summary (from the reset grade) and the numbered edits. `apply` and
`revert` are this mode's edits: a successful one is graded for `edit_progress` like a str_replace,
one that cannot be made is a `failed_edit`; run_tests, submit and parse errors are as in free mode.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pappo.config.env import EnvParams
from pappo.env.candidate_board import CandidateBoard
from pappo.env.protocol import ParseError, ToolCall, candidate_messages, initial_messages, parse_tool_call
from pappo.env.tools import EditResult, Workspace, summarize_tests, truncate
from pappo.io import PappoError, tree_sha256
from pappo.tasks.candidates import TaskCandidates
from pappo.tasks.models import Task

if TYPE_CHECKING:
    from pappo.sandbox.grading import Grade

GradeItem = tuple[Task, Mapping[str, bytes], Mapping[str, bytes]]  # (task, clean tree, candidate)
GradeFn = Callable[[Sequence[GradeItem]], "list[Grade]"]
EventKind = Literal["edit_progress", "failed_edit", "repeated_test", "parse_error"]


@dataclass(frozen=True)
class Event:
    """A process-reward event of one turn (turns count from 1)."""

    turn: int
    kind: EventKind
    reward: float
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StepResult:
    observation: dict[str, Any]  # the message appended after the assistant turn
    reward: float  # the turn's process rewards, plus the terminal reward on the last turn
    done: bool
    events: list[Event]


@dataclass
class EpisodeMetrics:
    """Per-episode metrics (docs/design.md, "Environment"); `tokens` is added by the rollout, not here."""

    instance_id: str
    success: bool = False
    failed_edit: int = 0
    tool_cost: float = 0.0  # weighted by params.env.tool_cost
    repeated_test: int = 0
    parse_error: int = 0
    turns: int = 0
    test_runs: int = 0  # run_tests calls by the agent (hidden grades not counted)
    infra_error: bool = False
    hack_attempt: bool = False
    plausible_wrong: bool = False  # final grade: visible tests pass, hidden checks fail
    submitted: bool = False  # False: cut at max_turns or by the token budget
    truncated: bool = False  # ended between turns by the rollout's token budget (`truncate`)
    edits: int = 0  # str_replace calls that applied (candidates mode: apply and revert calls that did)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Turn:
    """A turn between begin_step and end_step."""

    call: ToolCall | ParseError
    text: str = ""  # observation, unless run_tests fills it from the grade
    events: list[Event] = field(default_factory=list)
    edited: bool = False
    final: bool = False
    requests: list[GradeItem] = field(default_factory=list)


class RepairEnv:
    """An episode on one task; `reset()` starts (or restarts) it from the buggy tree.

    `candidates` (the task's line of the candidates file, `TaskStore.candidates`) and `seed` (the
    episode's: it orders the shown edits) are used in candidates mode only."""

    def __init__(
        self,
        task: Task,
        clean_tree: Mapping[str, bytes],
        buggy_tree: Mapping[str, bytes],
        params: EnvParams,
        grade_fn: GradeFn | None = None,
        candidates: TaskCandidates | None = None,
        seed: int = 0,
    ) -> None:
        self.task, self.params, self.grade_fn = task, params, grade_fn
        self.clean_tree, self.buggy_tree = dict(clean_tree), dict(buggy_tree)
        if params.actions == "candidates" and (
            candidates is None or candidates.instance_id != task.instance_id
        ):
            raise PappoError(
                f"env.actions is candidates but no candidate edits were given for {task.instance_id}; "
                "pass TaskStore.candidates[instance_id] (built by `pappo candidates`)"
            )
        self.candidates, self.seed = candidates, seed
        self.done = True  # until reset
        self._turn: _Turn | None = None
        self._resetting = False

    # -- whole steps, graded with the env's own grade_fn
    def reset(self) -> list[dict[str, Any]]:
        return self.end_reset(self._grade(self.begin_reset()))

    def step(self, text: str) -> StepResult:
        return self.end_step(self._grade(self.begin_step(text)))

    # -- two-phase API (VecEnv)
    def begin_reset(self) -> list[GradeItem]:
        self.ws = Workspace(self.buggy_tree, self.params)
        self.metrics = EpisodeMetrics(self.task.instance_id)
        self.board = self._board()
        self.transcript: list[dict[str, Any]] = (
            [] if self.board else initial_messages(self.task, self.buggy_tree)
        )
        self.events: list[Event] = []
        self.per_turn_rewards: list[float] = []
        self.terminal_reward = 0.0
        self.final_grade: Grade | None = None
        self.turn = 0
        self.initial_failing = self._failing = len(self.task.FAIL_TO_PASS)
        self._grades: dict[str, Grade] = {}  # tree sha256 -> grade without infra_error
        self._tested: str | None = None  # tree sha256 at the last completed run_tests
        self.done, self._turn, self._resetting = False, None, True
        return [(self.task, self.clean_tree, self.ws.tree())]

    def end_reset(self, grades: Sequence[Grade]) -> list[dict[str, Any]]:
        if not self._resetting:
            raise PappoError("end_reset() without begin_reset()")
        self._resetting = False
        grade = self._take(grades, 1)
        if grade is not None and not grade.infra_error:
            self.initial_failing = self._failing = grade.n_failing
        if self.board is not None:
            failing = summarize_tests(grade) if grade is not None else "the tests were not run."
            self.transcript = candidate_messages(failing, self.board.listing())
        return [dict(m) for m in self.transcript]

    def begin_step(self, text: str) -> list[GradeItem]:
        """Apply one assistant turn; returns the grade requests end_step needs."""
        if self.done or self._resetting or self._turn is not None:
            raise PappoError(
                f"{self.task.instance_id}: step out of order (episode over, or "
                "reset/step not finished); call reset() to start an episode"
            )
        self.turn = self.metrics.turns = self.turn + 1
        self.transcript.append({"role": "assistant", "content": text})
        call = parse_tool_call(text, self.params.actions)
        key = "parse_error" if isinstance(call, ParseError) else call.name
        self.metrics.tool_cost += getattr(self.params.tool_cost, key)
        turn = self._apply(call)
        turn.final = turn.final or self.turn >= self.params.max_turns
        if (turn.edited or key == "run_tests" or turn.final) and self._key() not in self._grades:
            turn.requests = [(self.task, self.clean_tree, self.ws.tree())]
        self._turn = turn
        return list(turn.requests)

    def end_step(self, grades: Sequence[Grade]) -> StepResult:
        turn = self._turn
        if turn is None:
            raise PappoError("end_step() without begin_step()")
        fresh = self._take(grades, len(turn.requests))
        grade = fresh if fresh is not None else self._grades.get(self._key())
        if turn.edited:
            turn.events.append(self._progress(grade))
        if isinstance(turn.call, ToolCall) and turn.call.name == "run_tests":
            turn.text = self._run_tests(grade)
        reward = sum(e.reward for e in turn.events)
        if turn.final:
            reward += self._finish(grade)
        observation = self._observation(turn)
        self.transcript.append(observation)
        self.events.extend(turn.events)
        self.per_turn_rewards.append(reward)
        self._turn = None
        return StepResult(observation, reward, self.done, turn.events)

    def begin_truncate(self) -> list[GradeItem]:
        """End the episode between turns (the rollout's token budget is spent): the current tree
        is graded as at a cut by max_turns. Returns the grade request end_truncate needs."""
        if self.done or self._resetting or self._turn is not None:
            raise PappoError(f"{self.task.instance_id}: truncate out of order (episode over or a step open)")
        requests = [] if self._key() in self._grades else [(self.task, self.clean_tree, self.ws.tree())]
        self._truncating: int | None = len(requests)
        return requests

    def end_truncate(self, grades: Sequence[Grade]) -> float:
        """Finish a truncation; the terminal reward is added to the last turn's reward."""
        expected = getattr(self, "_truncating", None)
        if expected is None:
            raise PappoError("end_truncate() without begin_truncate()")
        self._truncating = None
        fresh = self._take(grades, expected)
        terminal = self._finish(fresh if fresh is not None else self._grades.get(self._key()))
        self.metrics.truncated = True
        if self.per_turn_rewards:
            self.per_turn_rewards[-1] += terminal
        return terminal

    # -- turn mechanics
    def _apply(self, call: ToolCall | ParseError) -> _Turn:
        turn = _Turn(call)
        rw = self.params.rewards
        if isinstance(call, ParseError):
            self.metrics.parse_error += 1
            turn.text = call.message
            turn.events.append(Event(self.turn, "parse_error", rw.parse_error, {"message": call.message}))
        elif self.board is not None and call.name in ("apply", "revert", "view"):
            self._candidate_tool(call, turn)
        elif call.name == "view":
            turn.text = self.ws.view(**call.arguments)
        elif call.name == "search":
            turn.text = self.ws.search(**call.arguments)
        elif call.name == "str_replace":
            self._edited(self.ws.str_replace(**call.arguments), turn)
        elif call.name == "run_tests":
            self.metrics.test_runs += 1
            if self._tested == self._key():
                self.metrics.repeated_test += 1
                turn.events.append(Event(self.turn, "repeated_test", rw.repeated_test))
        else:  # submit
            self.metrics.submitted = turn.final = True
            turn.text = "Submitted; the episode is over."
        return turn

    def _edited(self, result: EditResult, turn: _Turn) -> None:
        """An edit's outcome: graded for edit_progress if it applied, else a failed_edit event."""
        turn.text, turn.edited = result.message, result.ok
        if result.ok:
            self.metrics.edits += 1
        else:
            self.metrics.failed_edit += 1
            detail = {"message": result.message}
            turn.events.append(Event(self.turn, "failed_edit", self.params.rewards.failed_edit, detail))

    def _candidate_tool(self, call: ToolCall, turn: _Turn) -> None:
        board = self.board
        assert board is not None
        if call.name == "view":
            turn.text = board.view(self.ws, call.arguments["id"])
        elif call.name == "apply":
            self._edited(board.apply(self.ws, call.arguments["id"]), turn)
        else:
            self._edited(board.revert(self.ws), turn)

    def _board(self) -> CandidateBoard | None:
        if self.params.actions != "candidates" or self.candidates is None:
            return None
        return CandidateBoard(self.candidates, self.params.candidates.k, self.seed, self.buggy_tree)

    def _progress(self, grade: Grade | None) -> Event:
        """edit_progress: the change in a potential, the drop in failing tests from the start over
        the initial count, clipped to [-1, 1] and weighted (negative if worse). A potential's changes
        sum to its last value over the episode (Ng, Harada & Russell 1999, "Policy invariance under
        reward transformations"), so no sequence of edits earns more than one fix: clipping each
        turn's change instead let an agent break many tests in one edit for one weight and earn a
        weight back for each test restored. Through the buggy tree (candidates mode) the two agree
        bit for bit."""
        if grade is None or grade.infra_error:
            return Event(self.turn, "edit_progress", 0.0, {"infra_error": True})
        delta = self._failing - grade.n_failing
        reward = self._potential(grade.n_failing) - self._potential(self._failing)
        detail = {"delta_failing": delta, "failing_before": self._failing, "failing_after": grade.n_failing}
        self._failing = grade.n_failing
        return Event(self.turn, "edit_progress", reward, detail)

    def _potential(self, failing: int) -> float:
        """edit_progress weight x (initial - failing) / initial, clipped to [-1, 1]: at most one
        weight for a fix, at least minus one for any breakage."""
        share = max(-1.0, min(1.0, (self.initial_failing - failing) / max(1, self.initial_failing)))
        return self.params.rewards.edit_progress * share

    def _run_tests(self, grade: Grade | None) -> str:
        if grade is None:  # cannot happen: begin_step asks for a grade when none is cached
            raise PappoError("run_tests without a grade")
        if not grade.infra_error:
            self._tested = self._key()  # a failed run does not make the retry a repeat
        return summarize_tests(grade)

    def _finish(self, grade: Grade | None) -> float:
        self.done = True
        self.final_grade = grade
        self.metrics.success = bool(grade and grade.success)
        self.metrics.plausible_wrong = bool(grade and grade.plausible_wrong)
        self.terminal_reward = self.params.rewards.success if self.metrics.success else 0.0
        return self.terminal_reward

    def _observation(self, turn: _Turn) -> dict[str, Any]:
        content = truncate(turn.text, self.params.max_observation_chars)
        if isinstance(turn.call, ParseError):  # no tool was called, so no tool message
            return {"role": "user", "content": content}
        return {"role": "tool", "name": turn.call.name, "content": content}

    # -- grades
    def _key(self) -> str:
        return tree_sha256(self.ws.files)

    def _take(self, grades: Sequence[Grade], expected: int) -> Grade | None:
        """Record the grades of this env's requests (at most one); returns it."""
        if len(grades) != expected:
            raise PappoError(f"{self.task.instance_id}: expected {expected} grade(s), got {len(grades)}")
        if not grades:
            return None
        grade = grades[0]
        self.metrics.infra_error |= grade.infra_error is not None
        self.metrics.hack_attempt |= grade.hack_attempt
        if grade.infra_error is None:
            self._grades[self._key()] = grade
        return grade

    def _grade(self, items: list[GradeItem]) -> list[Grade]:
        if not items:
            return []
        if self.grade_fn is None:
            raise PappoError("this RepairEnv has no grade_fn; step it through VecEnv or pass one")
        return list(self.grade_fn(items))
