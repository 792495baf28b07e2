"""Chat and tool-call protocol: tool schemas, the opening messages, Hermes-style tool calls.

An assistant turn is free text (reasoning) followed by exactly one block, as Qwen2.5 writes it:

    <tool_call>
    {"name": "view", "arguments": {"path": "pkg/core.py"}}
    </tool_call>

Parse rules (`parse_tool_call`): exactly one `<tool_call>` and one `</tool_call>`; text before the
block is the thought; only whitespace may follow the block (a turn ends with its call, so text
after it, often a made-up tool response, is an error); the block holds one JSON object with
"name" (one of TOOLS) and "arguments" (an object; may be left out when the tool takes none).
Arguments must be the tool's parameters with the right JSON types; unknown keys are rejected and
a null optional argument counts as absent. Range and path checks belong to the tools themselves.

Two action modes (`env.actions`), each with its own tools and system prompt: `free` (TOOLS: view a
file, search, str_replace, run_tests, submit) and `candidates` (CANDIDATE_TOOLS: apply or view a
numbered candidate edit, revert, run_tests, submit). A turn is parsed against its mode's tools.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pappo.tasks.models import Task

Mode = Literal["free", "candidates"]

OPEN, CLOSE = "<tool_call>", "</tool_call>"

SYSTEM_PROMPT = (
    "You repair a small Python repository so that its test suite passes. "
    "Each turn, think briefly, then make exactly one tool call. "
    "Tests under tests/ are read-only: fix the library code. "
    "Run the tests after editing, and call submit() once they pass."
)


def _fn(name: str, description: str, props: dict[str, dict[str, str]], required: list[str]) -> dict[str, Any]:
    params = {"type": "object", "properties": props, "required": required}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": params}}


# OpenAI-style function schemas: what Qwen2.5's chat template lists in its <tools> block.
TOOLS: list[dict[str, Any]] = [
    _fn(
        "view",
        "Show a file with line numbers, or list the files under a directory ('.' lists all).",
        {
            "path": {"type": "string", "description": "Path relative to the repository root."},
            "start": {"type": "integer", "description": "First line to show (1-based)."},
            "end": {"type": "integer", "description": "Last line to show (inclusive); -1 means the end."},
        },
        ["path"],
    ),
    _fn(
        "search",
        "Find a plain substring (not a regex) in every file; prints path:line: text.",
        {"pattern": {"type": "string", "description": "Text to look for."}},
        ["pattern"],
    ),
    _fn(
        "str_replace",
        "Replace old_str, which must occur exactly once in the file, by new_str.",
        {
            "path": {"type": "string", "description": "File to edit."},
            "old_str": {"type": "string", "description": "Exact text to replace, whitespace included."},
            "new_str": {"type": "string", "description": "Replacement text."},
        },
        ["path", "old_str", "new_str"],
    ),
    _fn("run_tests", "Run the test suite and summarise the result.", {}, []),
    _fn("submit", "Finish the episode; the current files are graded.", {}, []),
]
TOOL_NAMES: tuple[str, ...] = tuple(t["function"]["name"] for t in TOOLS)

# Candidates mode: the tiny model's context is the budget, so the system prompt names the tools in
# one line each and the chat template gets no <tools> block (`tools_for`): ~40% fewer prompt tokens.
CANDIDATE_SYSTEM_PROMPT = (
    "Make the failing tests pass by applying one of the numbered candidate edits. "
    'One tool call per turn, as <tool_call>\n{"name": <tool>, "arguments": <object>}\n</tool_call>. Tools:\n'
    'apply {"id": n}: apply candidate n (revert the applied one first)\n'
    "revert {}: undo the applied candidate\n"
    'view {"id": n}: show the code around candidate n\n'
    "run_tests {}: run the tests\n"
    "submit {}: finish; the code is graded\n"
    "Apply an edit, run the tests, revert it if they still fail, and submit once they pass."
)
_ID = {"id": {"type": "integer", "description": "Candidate number."}}
CANDIDATE_TOOLS: list[dict[str, Any]] = [
    _fn("apply", "Apply candidate edit id (revert the applied one first).", _ID, ["id"]),
    _fn("revert", "Undo the applied candidate edit.", {}, []),
    _fn("view", "Show the code around candidate edit id.", _ID, ["id"]),
    _fn("run_tests", "Run the tests.", {}, []),
    _fn("submit", "Finish; the code is graded.", {}, []),
]
_MODE_TOOLS: dict[str, list[dict[str, Any]]] = {"free": TOOLS, "candidates": CANDIDATE_TOOLS}
_SCHEMAS = {
    mode: {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    for mode, tools in _MODE_TOOLS.items()
}
_JSON_TYPES = {"string": str, "integer": int}


def tools_for(mode: Mode) -> list[dict[str, Any]]:
    """What the chat template lists in its <tools> block: the schemas in free mode (as Qwen2.5 was
    tuned on), none in candidates mode, whose system prompt describes its tools in brief."""
    return TOOLS if mode == "free" else []


def tool_names(mode: Mode) -> tuple[str, ...]:
    return tuple(_SCHEMAS[mode])


def system_prompt(mode: Mode) -> str:
    return SYSTEM_PROMPT if mode == "free" else CANDIDATE_SYSTEM_PROMPT


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    thought: str = ""  # text before the block, stripped


@dataclass(frozen=True)
class ParseError:
    message: str  # addressed to the agent: it becomes the observation


def initial_messages(task: Task, tree: Mapping[str, bytes]) -> list[dict[str, Any]]:
    """[system, user]: the user turn holds the issue and the repository's file list."""
    files = "\n".join(sorted(tree))
    user = f"{task.problem_statement.rstrip()}\n\nRepository files:\n{files}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def candidate_messages(failing: str, listing: str) -> list[dict[str, Any]]:
    """[system, user] of candidates mode: the failing tests' summary and the numbered candidate edits."""
    user = f"Tests: {failing.strip()}\n\nCandidate edits:\n{listing.rstrip()}"
    return [{"role": "system", "content": CANDIDATE_SYSTEM_PROMPT}, {"role": "user", "content": user}]


def parse_tool_call(text: str, mode: Mode = "free") -> ToolCall | ParseError:
    """The single tool call of an assistant turn, or what is wrong with the turn."""
    n_open, n_close = text.count(OPEN), text.count(CLOSE)
    if n_open == 0 and n_close == 0:
        return ParseError(f"No tool call found. End your turn with one {OPEN}...{CLOSE} block.")
    if n_open > 1 or n_close > 1:
        return ParseError(f"Found {max(n_open, n_close)} tool calls; make exactly one call per turn.")
    start, end = text.find(OPEN), text.find(CLOSE)
    if n_open != 1 or n_close != 1 or end < start:
        return ParseError(f"Malformed tool call: need {OPEN}, the JSON object, then {CLOSE}.")
    if text[end + len(CLOSE) :].strip():
        return ParseError(f"Text after {CLOSE}: end your turn right after the tool call.")
    try:
        obj = json.loads(text[start + len(OPEN) : end])
    except json.JSONDecodeError as e:
        return ParseError(f"The tool call is not valid JSON ({e.msg} at char {e.pos}).")
    if not isinstance(obj, dict) or "name" not in obj or set(obj) - {"name", "arguments"}:
        return ParseError('The tool call must be a JSON object {"name": ..., "arguments": {...}}.')
    name, args = obj["name"], obj.get("arguments", {})
    if not isinstance(name, str) or name not in _SCHEMAS[mode]:  # a sampled name may be any JSON value
        return ParseError(f"Unknown tool {name!r}; the tools are {', '.join(tool_names(mode))}.")
    if not isinstance(args, dict):
        return ParseError(f"The arguments of {name} must be a JSON object.")
    problem = check_arguments(name, args, mode)
    if problem:
        return ParseError(problem)
    clean = {k: v for k, v in args.items() if v is not None}
    return ToolCall(name, clean, text[:start].strip())


# A scalar JSON value after a key (group 1): a string's contents (group 2) or a number/literal (group 3).
_KEY_VALUE = re.compile(
    r'"([A-Za-z_][A-Za-z0-9_]*)"\s*:\s*(?:"((?:[^"\\]|\\.)*)"|(-?\d+(?:\.\d+)?|true|false|null))'
)


def decision_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, key) of the choices a turn makes: the non-empty scalar values inside its
    (first) tool-call block, i.e. the tool name (key "name") and each argument value. Thought,
    tags, keys and punctuation are format, not decisions (`rl.loss_tokens: decisions` trains only
    these). A block cut before its values, or no block, has none."""
    start = text.find(OPEN)
    if start < 0:
        return []
    end = text.find(CLOSE, start)
    spans = []
    for m in _KEY_VALUE.finditer(text, start + len(OPEN), len(text) if end < 0 else end):
        group = 2 if m.group(2) is not None else 3
        if m.end(group) > m.start(group):
            spans.append((m.start(group), m.end(group), m.group(1)))
    return spans


def check_arguments(name: str, args: Mapping[str, Any], mode: Mode = "free") -> str | None:
    """What is wrong with `args` for tool `name` of `mode` (None when they fit its schema)."""
    schema = _SCHEMAS[mode][name]
    props, required = schema["properties"], schema["required"]
    unknown = sorted(set(args) - set(props))
    if unknown:
        allowed = ", ".join(props) or "none"
        return f"{name}: unknown argument(s) {', '.join(unknown)} (allowed: {allowed})."
    missing = [k for k in required if args.get(k) is None]
    if missing:
        return f"{name}: missing required argument(s) {', '.join(missing)}."
    for key, value in args.items():
        want = props[key]["type"]
        if value is not None and (not isinstance(value, _JSON_TYPES[want]) or isinstance(value, bool)):
            return f"{name}: argument {key} must be a JSON {want}, got {type(value).__name__}."
    return None


def format_tool_call(
    name: str, arguments: Mapping[str, Any] | None = None, thought: str = "", mode: Mode = "free"
) -> str:
    """An assistant turn in Hermes format (what Qwen2.5's chat template renders for a tool call)."""
    args = dict(arguments or {})
    if not isinstance(name, str) or name not in _SCHEMAS[mode]:  # a sampled name may be any JSON value
        raise ValueError(f"unknown tool {name!r}; the tools are {', '.join(tool_names(mode))}")
    problem = check_arguments(name, args, mode)
    if problem:
        raise ValueError(problem)
    body = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    if OPEN in body or CLOSE in body or OPEN in thought or CLOSE in thought:
        raise ValueError("a tool call cannot contain the <tool_call> tags themselves")
    block = f"{OPEN}\n{body}\n{CLOSE}"
    return f"{thought.strip()}\n{block}" if thought.strip() else block
