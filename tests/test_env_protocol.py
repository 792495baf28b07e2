"""Tool-call protocol: schemas, Hermes format round trip, and every way a turn fails to parse."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pappo.env.protocol import (
    SYSTEM_PROMPT,
    TOOL_NAMES,
    TOOLS,
    ParseError,
    ToolCall,
    decision_spans,
    format_tool_call,
    initial_messages,
    parse_tool_call,
)
from pappo.tasks.store import TaskStore

SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


def call(body: str, before: str = "", after: str = "") -> str:
    return f"{before}<tool_call>\n{body}\n</tool_call>{after}"


def test_tools_are_the_five_openai_function_schemas():
    assert TOOL_NAMES == ("view", "search", "str_replace", "run_tests", "submit")
    for tool in TOOLS:
        assert tool["type"] == "function" and tool["function"]["description"]
        params = tool["function"]["parameters"]
        jsonschema.Draft202012Validator.check_schema(params)
        assert params["type"] == "object" and set(params["required"]) <= set(params["properties"])
    assert SCHEMAS["view"]["required"] == ["path"]
    assert SCHEMAS["str_replace"]["required"] == ["path", "old_str", "new_str"]
    assert SCHEMAS["run_tests"]["properties"] == {} == SCHEMAS["submit"]["properties"]


def test_format_is_exactly_hermes():
    assert format_tool_call("view", {"path": "a.py"}) == (
        '<tool_call>\n{"name": "view", "arguments": {"path": "a.py"}}\n</tool_call>'
    )
    assert format_tool_call("submit", thought="  Done.\n") == (
        'Done.\n<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>'
    )
    assert "é" in format_tool_call("search", {"pattern": "é"})  # not \u-escaped, as tojson writes it


_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40).filter(
    lambda s: "<tool_call>" not in s and "</tool_call>" not in s
)
_line = st.integers(min_value=-1, max_value=10_000)


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[str, dict[str, Any], str]:
    name = draw(st.sampled_from(TOOL_NAMES))
    args: dict[str, Any] = {}
    if name == "view":
        args["path"] = draw(_text)
        for key in ("start", "end"):
            if draw(st.booleans()):
                args[key] = draw(_line)
    elif name == "search":
        args["pattern"] = draw(_text)
    elif name == "str_replace":
        args = {"path": draw(_text), "old_str": draw(_text), "new_str": draw(_text)}
    return name, args, draw(_text)


@settings(max_examples=300, deadline=None)
@given(tool_calls())
def test_parse_inverts_format(case: tuple[str, dict[str, Any], str]):
    name, args, thought = case
    parsed = parse_tool_call(format_tool_call(name, args, thought))
    assert parsed == ToolCall(name, args, thought.strip())
    jsonschema.validate(parsed.arguments, SCHEMAS[name])


def test_whitespace_after_the_block_and_missing_arguments_are_accepted():
    assert parse_tool_call(call('{"name": "run_tests"}', after="\n  \n")) == ToolCall("run_tests")
    got = parse_tool_call(call('{"name": "view", "arguments": {"path": "a", "start": null}}', "Look.\n"))
    assert got == ToolCall("view", {"path": "a"}, "Look.")  # null optional = absent


@pytest.mark.parametrize(
    "text, expect",
    [
        ("I will just think.", "No tool call found"),
        ("", "No tool call found"),
        (call('{"name": "run_tests"}') + call('{"name": "submit"}'), "Found 2 tool calls"),
        ('<tool_call>\n{"name": "submit"}', "Malformed tool call"),
        ('</tool_call>{"name": "submit"}<tool_call>', "Malformed tool call"),
        (call('{"name": "submit"}', after="\n<tool_response>ok</tool_response>"), "Text after </tool_call>"),
        (call('{"name": "run_tests", "arguments": {}'), "not valid JSON"),
        (call("[1, 2]"), "must be a JSON object"),
        (call('{"arguments": {}}'), "must be a JSON object"),
        (call('{"name": "submit", "arguments": {}, "id": 3}'), "must be a JSON object"),
        (call('{"name": "edit_file", "arguments": {}}'), "Unknown tool 'edit_file'"),
        (call('{"name": {"a": 1}, "arguments": {}}'), "Unknown tool {'a': 1}"),  # unhashable names
        (call('{"name": ["submit"]}'), "Unknown tool ['submit']"),
        (call('{"name": "view", "arguments": "{\\"path\\": \\"a\\"}"}'), "must be a JSON object"),
        (call('{"name": "view", "arguments": {}}'), "missing required argument(s) path"),
        (call('{"name": "view", "arguments": {"path": "a", "line": 3}}'), "unknown argument(s) line"),
        (call('{"name": "view", "arguments": {"path": "a", "start": "3"}}'), "start must be a JSON integer"),
        (call('{"name": "view", "arguments": {"path": "a", "end": true}}'), "end must be a JSON integer"),
        (call('{"name": "view", "arguments": {"path": "a", "end": 2.5}}'), "end must be a JSON integer"),
        (call('{"name": "search", "arguments": {"pattern": 7}}'), "pattern must be a JSON string"),
        (call('{"name": "run_tests", "arguments": {"verbose": true}}'), "allowed: none"),
        (call('{"name": "str_replace", "arguments": {"path": "a", "old_str": "x"}}'), "new_str"),
    ],
)
def test_bad_turns_are_parse_errors_with_a_message_for_the_agent(text: str, expect: str):
    got = parse_tool_call(text)
    assert isinstance(got, ParseError)
    assert expect in got.message


def test_format_refuses_what_parse_would_reject():
    with pytest.raises(ValueError, match="unknown tool"):
        format_tool_call("edit", {})
    with pytest.raises(ValueError, match="missing required"):
        format_tool_call("view", {})
    with pytest.raises(ValueError, match="tags"):
        format_tool_call("search", {"pattern": "</tool_call>"})


def test_initial_messages_hold_statement_and_file_list(fx_params):
    store = TaskStore.from_params(fx_params, "repofix")
    task = store.task("tinycalc-001")
    tree = store.buggy(task)
    system, user = initial_messages(task, tree)
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert user["role"] == "user" and user["content"].startswith(task.problem_statement.rstrip())
    listed = user["content"].split("Repository files:\n", 1)[1].splitlines()
    assert listed == sorted(tree)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(name=json_values, arguments=json_values, mode=st.sampled_from(["free", "candidates"]))
def test_any_json_in_a_tool_call_parses_or_is_a_parse_error(name, arguments, mode):
    """A sampled turn may hold any JSON: parsing never raises, whatever the name or arguments."""
    text = call(json.dumps({"name": name, "arguments": arguments}))
    got = parse_tool_call(text, mode)
    assert isinstance(got, (ToolCall, ParseError))
    if isinstance(got, ToolCall):
        assert got.name == name and isinstance(arguments, dict)


@pytest.mark.parametrize(
    ("text", "values"),
    [
        (format_tool_call("apply", {"id": 3}, "Try candidate 2.", mode="candidates"), ["apply", "3"]),
        (format_tool_call("run_tests", mode="candidates"), ["run_tests"]),
        (
            format_tool_call("str_replace", {"path": "a.py", "old_str": 'x "q"', "new_str": "y"}),
            ["str_replace", "a.py", 'x \\"q\\"', "y"],
        ),
        ('Try 4.\n<tool_call>\n{"name": "apply", "arguments": {"id": }}', ["apply"]),  # cut: no id value
        ('<tool_call>\n{"name": "apply", "arguments": {"id": -12}}\n</tool_call> "id": 9', ["apply", "-12"]),
        ('"name": "submit" but no block', []),
    ],
)
def test_decision_spans_are_the_call_values_only(text: str, values: list[str]):
    """The thought (even one naming an id), the keys, tags and text after the block are not decisions."""
    assert [text[a:b] for a, b, _ in decision_spans(text)] == values
    assert [key for *_, key in decision_spans(text)][:1] == (["name"] if values else [])


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(TOOL_NAMES), value=st.text(max_size=12) | st.integers(), thought=st.text(max_size=20)
)
def test_every_formatted_call_spells_its_values_in_its_spans(name: str, value: Any, thought: str):
    """For any call format_tool_call writes, the spans decode (as JSON) to the name and arguments."""
    args = {} if name in ("run_tests", "submit") else {k: value for k in SCHEMAS[name]["required"]}
    try:
        text = format_tool_call(name, args, thought)
    except ValueError:
        return  # a call format_tool_call refuses (wrong type, tags in the thought)
    got = [text[a:b] for a, b, _ in decision_spans(text)]
    spelled = [json.dumps(v, ensure_ascii=False) for v in args.values()]
    want = [name] + [j[1:-1] if j.startswith('"') else j for j in spelled]
    assert got == [w for w in want if w]  # an empty string spells no token
