"""Scripted agents: the oracle (knows the fix), a seeded noisy oracle, and one that just submits.

They drive the environment in tests and produce demonstrations; each writes Hermes-format
assistant turns exactly as a model would.
"""

from __future__ import annotations

import ast
import difflib
import random
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pappo.config.env import EnvParams
from pappo.env.episode import EpisodeMetrics, RepairEnv
from pappo.env.protocol import format_tool_call
from pappo.env.tools import Workspace, count_occurrences
from pappo.env.vec import VecEnv
from pappo.tasks.models import Task
from pappo.tasks.patches import apply_patch

HUNK_GAP = 6  # changes this close share one edit, as they would share a 3-line-context hunk
VIEW_CONTEXT = 2  # lines shown around the function holding the bug
VIEW_MAX_LINES = EnvParams().view_max_lines


class Agent(Protocol):
    def act(self, messages: Sequence[dict[str, Any]]) -> str: ...


@dataclass
class Action:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    thought: str = ""

    def text(self) -> str:
        return format_tool_call(self.name, self.arguments, self.thought)


def play(env: RepairEnv, agent: Agent) -> tuple[EpisodeMetrics, list[dict[str, Any]]]:
    """Run one episode of `agent` in `env` (graded with the env's grade_fn)."""
    env.reset()
    while not env.done:
        env.step(agent.act(list(env.transcript)))
    return env.metrics, env.transcript


def play_all(vec: VecEnv, agents: Sequence[Agent], reset: bool = True) -> None:
    """Run one episode per env of `vec` in lockstep, agent i playing env i (grades batched per step);
    `reset=False` for envs already reset (agents made from their boards, candidates mode)."""
    if reset:
        vec.reset()
    while not all(vec.done):
        vec.step([None if e.done else a.act(e.transcript) for e, a in zip(vec.envs, agents)])


# -- the oracle's script
def fix_edits(buggy: Mapping[str, bytes], clean: Mapping[str, bytes]) -> list[Action]:
    """str_replace calls that, applied in order, turn `buggy` into `clean` byte for byte."""
    actions = []
    for path in sorted(p for p in buggy if buggy[p] != clean[p]):
        for old, new in _file_edits(buggy[path].decode(), clean[path].decode(), path.endswith(".py")):
            actions.append(Action("str_replace", {"path": path, "old_str": old, "new_str": new}))
    return actions


def _file_edits(old: str, new: str, python: bool) -> list[tuple[str, str]]:
    """One (old_str, new_str) per change block, bottom-up so the line numbers above stay valid.

    If an intermediate state of a Python file would not parse (the env rejects such an edit),
    the whole changed span becomes one edit instead.
    """
    blocks = _change_blocks(old, new)
    edits, text = [], old
    for i1, i2, j1, j2 in reversed(blocks):
        pair = _unique_window(text, i1, i2, new.splitlines(keepends=True)[j1:j2])
        edits.append(pair)
        text = text.replace(pair[0], pair[1], 1)
        if python and text != new and not _parses(text):
            (i1, _, j1, _), (_, i2, _, j2) = blocks[0], blocks[-1]
            return [_unique_window(old, i1, i2, new.splitlines(keepends=True)[j1:j2])]
    return edits


def _change_blocks(old: str, new: str) -> list[tuple[int, int, int, int]]:
    """Changed line ranges (old i1:i2, new j1:j2), nearby changes merged."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    blocks: list[tuple[int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            continue
        if blocks and i1 - blocks[-1][1] <= HUNK_GAP:
            blocks[-1] = (blocks[-1][0], i2, blocks[-1][2], j2)
        else:
            blocks.append((i1, i2, j1, j2))
    return blocks


def _unique_window(text: str, i1: int, i2: int, mid: list[str]) -> tuple[str, str]:
    """Grow lines i1:i2 of `text` by a line each side until they occur once (and are non-empty)."""
    lines = text.splitlines(keepends=True)
    lo, hi = i1, i2
    while True:
        old = "".join(lines[lo:hi])
        if (old and len(count_occurrences(text, old)) == 1) or (lo == 0 and hi == len(lines)):
            break
        lo, hi = max(0, lo - 1), min(len(lines), hi + 1)
    return old, "".join(lines[lo:i1] + mid + lines[i2:hi])


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def view_action(buggy: Mapping[str, bytes], clean: Mapping[str, bytes], max_lines: int) -> Action:
    """View the function holding the first changed line (a window around it if none or too long)."""
    path = min(p for p in buggy if buggy[p] != clean[p])
    text = buggy[path].decode()
    i1, i2, _, _ = _change_blocks(text, clean[path].decode())[0]
    line = i1 + 1 if i2 > i1 else max(i1, 1)  # a pure insertion: the line before it
    n = max(1, len(text.splitlines()))
    span = _enclosing_def(text, line)
    lo, hi = (span[0] - VIEW_CONTEXT, span[1] + VIEW_CONTEXT) if span else (line - 5, line + 5)
    if hi - lo + 1 > max_lines:
        lo = line - max_lines // 2
        hi = lo + max_lines - 1
    lo, hi = max(1, lo), min(n, hi)
    thought = f"Let me read {path} around line {line}."
    return Action("view", {"path": path, "start": lo, "end": hi}, thought)


def _enclosing_def(text: str, line: int) -> tuple[int, int] | None:
    """First and last line (decorators included) of the innermost def holding `line`."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if start <= line <= node.end_lineno and (best is None or start >= best[0]):
                best = (start, node.end_lineno)
    return best


def oracle_plan(task: Task, buggy: Mapping[str, bytes], view_max_lines: int) -> list[Action]:
    """view the buggy function, one str_replace per change block, run_tests, submit."""
    clean = apply_patch(dict(buggy), task.patch)
    edits = fix_edits(buggy, clean)
    for edit in edits:
        edit.thought = f"Fix the faulty code in {edit.arguments['path']}."
    return [
        view_action(buggy, clean, view_max_lines),
        *edits,
        Action("run_tests", {}, "Run the tests to check the fix."),
        Action("submit", {}, "The tests pass; submit."),
    ]


class OracleAgent:
    """Follows `oracle_plan`; the next action depends only on how many turns were taken."""

    def __init__(
        self, task: Task, buggy_tree: Mapping[str, bytes], view_max_lines: int = VIEW_MAX_LINES
    ) -> None:
        self.plan = oracle_plan(task, buggy_tree, view_max_lines)

    def act(self, messages: Sequence[dict[str, Any]]) -> str:
        k = sum(1 for m in messages if m.get("role") == "assistant")
        return (self.plan[k] if k < len(self.plan) else Action("submit")).text()


class SubmitAgent:
    """Submits at once, without looking or editing."""

    def act(self, messages: Sequence[dict[str, Any]]) -> str:
        return Action("submit", {}, "Nothing to change.").text()


@dataclass
class _Step:
    action: Action
    plan: bool = False  # a step of the oracle's script (detours are not)
    noised: bool = False  # detours were already drawn for it


@dataclass
class NoisyAgent:
    """The oracle's script with seeded mistakes; deterministic given `seed`.

    Before each turn: with p_parse_error, an unparsable turn instead. Once per script step:
    before a fix, with p_failed_edit a str_replace that does not apply, and with p_wrong_edit
    an edit that applies but does not fix (it breaks the function or only adds a comment),
    followed by run_tests and an edit undoing it; after run_tests, with p_repeated_test,
    run_tests again. The script then resumes, so the fix lands unless max_turns cuts it.
    Stateful: use one instance per episode.
    """

    task: Task
    buggy_tree: Mapping[str, bytes]
    seed: int = 0
    p_wrong_edit: float = 0.2
    p_failed_edit: float = 0.2
    p_repeated_test: float = 0.2
    p_parse_error: float = 0.2
    view_max_lines: int = VIEW_MAX_LINES

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        plan = oracle_plan(self.task, self.buggy_tree, self.view_max_lines)
        self._queue = deque(_Step(a, plan=True) for a in plan)
        self._ws = Workspace(self.buggy_tree, EnvParams(view_max_lines=self.view_max_lines))

    def act(self, messages: Sequence[dict[str, Any]]) -> str:
        if self._rng.random() < self.p_parse_error:
            return self._unparsable()
        if not self._queue:
            return Action("submit").text()
        head = self._queue[0]
        if head.plan and not head.noised:
            head.noised = True
            self._queue.extendleft(reversed(self._detour(head.action)))
        step = self._queue.popleft()
        if step.action.name == "str_replace":
            self._ws.str_replace(**step.action.arguments)  # track the files as the env will have them
        if step.plan and step.action.name == "run_tests" and self._rng.random() < self.p_repeated_test:
            self._queue.appendleft(_Step(Action("run_tests", {}, "Run the tests again to be sure.")))
        return step.action.text()

    def _detour(self, action: Action) -> list[_Step]:
        if action.name != "str_replace":
            return []
        steps = []
        if self._rng.random() < self.p_failed_edit:
            failed = self._failed_edit(action)
            steps += [_Step(failed)] if failed else []
        if self._rng.random() < self.p_wrong_edit:
            steps += [_Step(a) for a in self._wrong_edit(action)]
        return steps

    def _failed_edit(self, fix: Action) -> Action | None:
        """A str_replace that does not apply: text not in the file, not unique, or a test file."""
        path, old = fix.arguments["path"], fix.arguments["old_str"]
        kind = self._rng.choice(["absent", "not_unique", "test_file"])
        absent = old.replace("    ", "\t") + "#"  # tabs for spaces: a classic near miss
        args = {"path": path, "old_str": absent, "new_str": fix.arguments["new_str"]}
        text = self._ws.text(path)
        repeated = [ln for ln in text.splitlines() if len(ln.strip()) > 3 and text.count(ln) > 1]
        tests = sorted(p for p in self._ws.files if p.startswith("tests/"))
        if kind == "not_unique" and repeated:
            args["old_str"] = repeated[0]
        elif kind == "test_file" and tests:
            first = next((ln for ln in self._ws.text(tests[0]).splitlines() if ln.strip()), "")
            args = {"path": tests[0], "old_str": first, "new_str": first + "  # fixed"}
        probe = Workspace(self._ws.files, self._ws.params)
        if not args["old_str"] or probe.str_replace(**args).ok:
            return None
        return Action("str_replace", args, "Edit the suspicious line.")

    def _wrong_edit(self, fix: Action) -> list[Action]:
        """An edit that applies without fixing, run_tests, and the edit undoing it."""
        path, old = fix.arguments["path"], fix.arguments["old_str"]
        first = old.splitlines(keepends=True)[0]
        indent = first[: len(first) - len(first.lstrip(" \t"))]
        lines = ['raise NotImplementedError("work in progress")', "# TODO: check this case"]
        if self._rng.random() < 0.5:
            lines.reverse()
        for line in lines:
            wrong = indent + line + "\n" + old
            probe = Workspace(self._ws.files, self._ws.params)
            if probe.str_replace(path, old, wrong).ok and probe.str_replace(path, wrong, old).ok:
                return [
                    Action("str_replace", {"path": path, "old_str": old, "new_str": wrong}, "Try a change."),
                    Action("run_tests", {}, "Check whether that helped."),
                    Action("str_replace", {"path": path, "old_str": wrong, "new_str": old}, "Undo that."),
                ]
        return []

    def _unparsable(self) -> str:
        """A turn without one valid tool call, in one of the ways models get it wrong."""
        kind = self._rng.choice(["prose", "bad_json", "unknown_tool", "two_calls"])
        if kind == "prose":
            return "Let me think about where the bug could be before calling a tool."
        if kind == "bad_json":
            return '<tool_call>\n{"name": "run_tests", "arguments": {}\n</tool_call>'
        if kind == "unknown_tool":
            return '<tool_call>\n{"name": "edit_file", "arguments": {"path": "setup.py"}}\n</tool_call>'
        return Action("run_tests").text() + "\n" + Action("submit").text()
