"""A scripted agent that acts only on what a model would see: the transcript.

Unlike the oracle (`agents.oracle_plan`, which knows the fix), every action of `GroundedAgent` is
a function of the messages so far: it searches for the symbol the issue's title names, views
the first library hit, and then tries one-token flips of the viewed lines (the classic
mutation-based repair of Debroy & Wong 2010), each checked by run_tests and undone when the
tests still fail. It is the procedure a model could learn without understanding the code, so
its success rate is a ceiling for a policy that has learned the procedure but no semantics.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pappo.env.protocol import ToolCall, format_tool_call, parse_tool_call

VIEW_LINES = 20  # viewed lines, from the definition on, whose flips are tried: where its code starts

# (pattern, replacement) one-token flips: the inverse of the benchmark's common bug kinds
# (comparison, boolean, arithmetic, negation, constant, index and argument-order slips).
FLIPS: tuple[tuple[str, str], ...] = (
    (r" == ", " != "),
    (r" != ", " == "),
    (r" <= ", " < "),
    (r" < ", " <= "),
    (r" >= ", " > "),
    (r" > ", " >= "),
    (r" and ", " or "),
    (r" or ", " and "),
    (r" is not ", " is "),
    (r" not in ", " in "),
    (r"\bnot ", ""),
    (r"^(\s*(?:if|while|return) )(?!not )", r"\1not "),
    (r" \+ 1\b", ""),
    (r" - 1\b", ""),
    (r" \+ ", " - "),
    (r" - ", " + "),
    (r" \* ", " / "),
    (r" / ", " * "),
    (r" // ", " / "),
    (r"\bTrue\b", "False"),
    (r"\bFalse\b", "True"),
    (r"\[0\]", "[-1]"),
    (r"\[-1\]", "[0]"),
    (r"\(([^(),]+), ([^(),]+)\)", r"(\2, \1)"),
)
_SKIP = re.compile(r"^\s*(def |class |@|#|\"\"\"|'''|$)")
_VIEW_LINE = re.compile(r"^\s*(\d+)\| (.*)$")


def title_symbol(problem_statement: str) -> str | None:
    """The symbol the issue's first line names in backticks (`name()`), if any."""
    found = re.search(r"`([A-Za-z_]\w*)\(\)`", problem_statement.split("\n", 1)[0])
    return found.group(1) if found else None


def candidate_edits(lines: Sequence[str]) -> list[tuple[str, str]]:
    """(old_line, new_line) for every flip of every viewed code line, top to bottom."""
    out = []
    for line in lines:
        if _SKIP.match(line) or len(line.strip()) < 4:
            continue
        code = line.split("  #", 1)[0]
        for pattern, repl in FLIPS:
            if line.lstrip().startswith("for ") and " in " in pattern:
                continue
            new = re.sub(pattern, repl, code, count=1) + line[len(code) :]
            if new != line and (line, new) not in out:
                out.append((line, new))
    return out


@dataclass
class GroundedAgent:
    """Search the titled symbol, view it, try flips with run_tests; transcript-only.

    `order`: "line" tries the flips top to bottom; "shuffle" in an order drawn from `seed`
    (for demonstrations that do not all try the same first edit). Stateless apart from the
    draw: every action is recomputed from the messages.
    """

    seed: int = 0
    order: Literal["line", "shuffle"] = "line"
    view_lines: int = VIEW_LINES
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._order: list[int] | None = None

    def act(self, messages: Sequence[dict[str, Any]]) -> str:
        calls = [_call(m["content"]) for m in messages if m["role"] == "assistant"]
        replies = [m["content"] for m in messages if m["role"] in ("tool", "user")][1:]
        name = title_symbol(messages[1]["content"])
        if not calls:
            if name is None:
                return format_tool_call("submit", {}, "The issue names no function; nothing to go on.")
            pattern = f"def {name}(" if name[0].islower() else f"class {name}"
            return format_tool_call("search", {"pattern": pattern}, f"Find where {name} is defined.")
        if len(calls) == 1:
            hit = _first_library_hit(replies[0])
            if hit is None:
                return format_tool_call("submit", {}, "No definition found; nothing to change.")
            path, line = hit
            return format_tool_call("view", {"path": path, "start": line}, f"Read {name} in {path}.")
        return self._next_edit(calls, replies)

    def _next_edit(self, calls: list[dict[str, Any]], replies: list[str]) -> str:
        last, reply = calls[-1], replies[-1]
        if last.get("name") == "run_tests" and "All tests pass" in reply:
            return format_tool_call("submit", {}, "The tests pass; submit.")
        edits = [
            (c["arguments"]["old_str"], c["arguments"]["new_str"])
            for c in calls
            if c.get("name") == "str_replace"
        ]
        undone = len(edits) >= 2 and edits[-1] == edits[-2][::-1]  # the last edit undid the one before
        if last.get("name") == "str_replace" and reply.startswith("Edited") and not undone:
            return format_tool_call("run_tests", {}, "Check whether that fixed it.")
        if last.get("name") == "run_tests" and calls[-2].get("name") == "str_replace":
            undo = calls[-2]["arguments"]
            return format_tool_call(
                "str_replace",
                {"path": undo["path"], "old_str": undo["new_str"], "new_str": undo["old_str"]},
                "That did not fix it; undo.",
            )
        path = calls[1].get("arguments", {}).get("path", "")
        for old, new in self._candidates(replies[1]):
            if (old, new) not in edits and (new, old) not in edits:
                return format_tool_call(
                    "str_replace", {"path": path, "old_str": old, "new_str": new}, "Try flipping this line."
                )
        return format_tool_call("submit", {}, "No more ideas; submit.")

    def _candidates(self, view: str) -> list[tuple[str, str]]:
        lines = [m.group(2) for m in map(_VIEW_LINE.match, view.splitlines()) if m][: self.view_lines]
        cands = candidate_edits(lines)
        if self.order == "shuffle":
            if self._order is None or len(self._order) != len(cands):
                self._order = self._rng.sample(range(len(cands)), len(cands))
            cands = [cands[i] for i in self._order]
        return cands


def _call(text: str) -> dict[str, Any]:
    """An assistant turn's tool call as {"name", "arguments"} ({} if it does not parse)."""
    call = parse_tool_call(text)
    return {"name": call.name, "arguments": call.arguments} if isinstance(call, ToolCall) else {}


def _first_library_hit(search_output: str) -> tuple[str, int] | None:
    """(path, line) of the first `path:line: text` row of a search outside tests/."""
    for row in search_output.splitlines():
        m = re.match(r"^([^:\s]+):(\d+): ", row)
        if m and not m.group(1).startswith("tests/"):
            return m.group(1), int(m.group(2))
    return None
