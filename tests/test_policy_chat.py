"""ChatCodec: prompt + sampled turns + observations decode to exactly the Qwen2.5 chat rendering."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer
from transformers import Qwen2Tokenizer

from pappo.config.env import EnvParams
from pappo.env.agents import NoisyAgent, OracleAgent, play
from pappo.env.episode import RepairEnv
from pappo.env.protocol import SYSTEM_PROMPT, TOOLS, format_tool_call
from pappo.io import PappoError
from pappo.policy.chat import QWEN25_CHAT_TEMPLATE, ChatCodec
from pappo.policy.tokenizer import SPECIAL_TOKENS, corpus_files, train_tokenizer
from pappo.tasks.store import TaskStore
from test_env_episode import FakeGrader

ROOT = Path(__file__).resolve().parents[1]
WARMUP = ROOT / "data" / "warmup"
Tok = Any


@pytest.fixture(scope="module")
def tiny() -> Tok:
    return train_tokenizer(corpus_files(WARMUP / "repos", max_bytes=200_000), 600)


def qwen_like(tiny: Tok) -> Tok:
    """A Qwen2.5-layout hub tokenizer: Qwen2's regex split + NFC, the ChatML tokens at the end of
    the vocabulary, the tool-call tags non-special, and no <tool_response> token."""
    model = json.loads(tiny.backend_tokenizer.to_str())["model"]
    ranked = sorted((i, t) for t, i in model["vocab"].items() if t not in SPECIAL_TOKENS)
    vocab = {t: n for n, (_, t) in enumerate(ranked)}
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    tok = Qwen2Tokenizer(
        vocab=vocab,
        merges=merges,
        unk_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=QWEN25_CHAT_TEMPLATE,
    )
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tok.add_tokens(["<tool_call>", "</tool_call>"])
    return tok


@pytest.fixture(scope="module", params=["tiny", "qwen_like"])
def codec(request, tiny) -> ChatCodec:
    return ChatCodec(tiny if request.param == "tiny" else qwen_like(tiny))


def episode(agent_kind: str, instance_id: str, seed: int = 0) -> list[dict[str, Any]]:
    store = TaskStore(WARMUP / "manifest.jsonl", WARMUP / "repos")
    task = store.task(instance_id)
    buggy = store.buggy(task)
    env = RepairEnv(task, store.clean(task), buggy, EnvParams(), FakeGrader())
    agent = OracleAgent(task, buggy) if agent_kind == "oracle" else NoisyAgent(task, buggy, seed=seed)
    return play(env, agent)[1]


def assemble(
    codec: ChatCodec, transcript: list[dict[str, Any]], stop_on_im_end: bool = False
) -> list[list[int]]:
    """The rollout's segments: prompt, then per turn the sampled ids and the observation ids."""
    segments = [codec.prompt_ids(transcript[:2])]
    for msg in transcript[2:]:
        if msg["role"] == "assistant":
            ids = codec.encode(msg["content"])
            if stop_on_im_end or not ids or ids[-1] not in codec.stop_ids:
                ids.append(codec.im_end_id)  # the policy ended its turn with <|im_end|>
            segments.append(ids)
        else:
            segments.append(codec.observation_ids(msg, segments[-1][-1]))
    return segments


def render(codec: ChatCodec, messages: list[dict[str, Any]], generation_prompt: bool) -> str:
    return codec.tokenizer.apply_chat_template(
        messages, tools=TOOLS, tokenize=False, add_generation_prompt=generation_prompt
    )


def flat(segments: list[list[int]]) -> list[int]:
    return [i for s in segments for i in s]


def test_hand_checked_transcript(tiny):
    codec = ChatCodec(tiny)
    call = format_tool_call("view", {"path": "a.py"}, "Look.")
    msgs = [
        {"role": "system", "content": "Fix it."},
        {"role": "user", "content": "Bug in a.py"},
        {"role": "assistant", "content": call},
        {"role": "tool", "name": "view", "content": "1: x = 1"},
        {"role": "assistant", "content": "Hmm."},
        {"role": "user", "content": "No tool call found."},
    ]
    tools = "\n".join(json.dumps(t) for t in TOOLS)
    system = (
        "<|im_start|>system\nFix it.\n\n# Tools\n\nYou may call one or more functions to assist with the "
        "user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n"
        f"<tools>\n{tools}\n</tools>\n\nFor each function call, return a json object with function name "
        'and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, '
        '"arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
    )
    prompt = system + "<|im_start|>user\nBug in a.py<|im_end|>\n<|im_start|>assistant\n"
    assert tiny.decode(codec.prompt_ids(msgs[:2])) == prompt
    obs1 = "<|im_end|>\n<|im_start|>user\n<tool_response>\n1: x = 1\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    assert tiny.decode(codec.observation_ids(msgs[3], codec.tool_call_close_id)) == obs1
    obs2 = "\n<|im_start|>user\nNo tool call found.<|im_end|>\n<|im_start|>assistant\n"
    assert tiny.decode(codec.observation_ids(msgs[5], codec.im_end_id)) == obs2
    assert call == 'Look.\n<tool_call>\n{"name": "view", "arguments": {"path": "a.py"}}\n</tool_call>'
    full = prompt + call + obs1 + "Hmm.<|im_end|>" + obs2
    assert render(codec, msgs, generation_prompt=True) == full
    assert tiny.decode(flat(assemble(codec, msgs))) == full


@pytest.mark.parametrize(
    ("agent", "instance_id", "seed"),
    [("oracle", "gradebook-001", 0), ("noisy", "wordfreq-002", 3), ("noisy", "playlist-004", 7)],
)
def test_episode_segments_decode_to_the_template(codec, agent, instance_id, seed):
    transcript = episode(agent, instance_id, seed)
    assert transcript[-1]["role"] in ("tool", "user") and len(transcript) > 6
    for stop_on_im_end in (False, True):
        segments = assemble(codec, transcript, stop_on_im_end)
        text = codec.tokenizer.decode(flat(segments))
        assert text == render(codec, transcript, generation_prompt=True)
        # Cut after the last assistant turn: the rollout appends its closing '<|im_end|>\n'.
        cut = codec.tokenizer.decode(flat(segments[:-1]))
        close = "\n" if segments[-2][-1] == codec.im_end_id else "<|im_end|>\n"
        assert cut + close == render(codec, transcript[:-1], generation_prompt=False)
        turns = [m["content"] for m in transcript if m["role"] == "assistant"]
        assert [codec.decode(s) for s in segments[1::2]] == turns


def test_oracle_ids_match_tokenizing_the_rendering(codec):
    """Turns start with a letter and end at special tokens, so segment boundaries are token
    boundaries: the rollout's ids equal a tokenization of the rendered transcript."""
    transcript = episode("oracle", "queuesim-001")
    segments = assemble(codec, transcript)
    assert flat(segments) == codec.encode(render(codec, transcript, generation_prompt=True))


def test_length_cut_closes_the_turn(tiny):
    codec = ChatCodec(tiny)
    msg = {"role": "user", "content": "No tool call found."}
    text = tiny.decode(codec.observation_ids(msg, None))
    assert text == "<|im_end|>\n<|im_start|>user\nNo tool call found.<|im_end|>\n<|im_start|>assistant\n"
    assert codec.observation_ids(msg, None) == codec.observation_ids(msg, codec.endoftext_id)


def test_special_tokens_are_single_ids(codec):
    tok = codec.tokenizer
    for s in ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"):
        assert len(codec.encode(s)) == 1, s
    assert codec.stop_ids == {codec.tool_call_close_id, codec.im_end_id, codec.endoftext_id}
    assert codec.pad_id == codec.endoftext_id == tok.pad_token_id
    ids = codec.encode(format_tool_call("submit", {}, "Done."))
    assert ids.count(tok.convert_tokens_to_ids("<tool_call>")) == 1 and ids[-1] == codec.tool_call_close_id


def test_tiny_ids(tiny):
    codec = ChatCodec(tiny)
    assert (codec.pad_id, codec.im_end_id, codec.tool_call_close_id) == (0, 2, 4)
    assert codec.encode("x<tool_call>y")[1] == 3 and codec.stop_ids == {0, 2, 4}


def test_decode_drops_turn_ends_keeps_tool_tags(codec):
    text = format_tool_call("run_tests", {}, "Run them.")
    ids = codec.encode(text)
    assert codec.decode([*ids, codec.im_end_id]) == text
    assert codec.decode([*codec.encode("Hi"), codec.endoftext_id, codec.endoftext_id]) == "Hi"


@settings(max_examples=150, deadline=None)
@given(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)
    | st.text(st.sampled_from('ab é\n\t{}"<>/_|😀'), max_size=80)
)
def test_round_trip(tiny, text):
    codec = ChatCodec(tiny)
    if "<|im_end|>" in text or "<|endoftext|>" in text:
        return  # decode drops these on purpose
    assert codec.decode(codec.encode(text)) == text


def test_structured_tool_calls_render_as_our_hermes_content(tiny):
    """The template's tool_calls branch writes exactly what format_tool_call puts in content."""
    args = {"path": "pkg/core.py", "old_str": "a - b", "new_str": "a + b"}
    structured = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": "str_replace", "arguments": args}}],
    }
    ours = {"role": "assistant", "content": format_tool_call("str_replace", args)}
    head = [{"role": "user", "content": "fix"}]
    assert render(ChatCodec(tiny), head + [structured], False) == render(
        ChatCodec(tiny), head + [ours], False
    )


def test_template_defaults_and_grouped_tool_results(tiny):
    codec = ChatCodec(tiny)
    plain = tiny.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    assert plain == (
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant."
        "<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )
    msgs = [
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "a"},
        {"role": "tool", "content": "r1"},
        {"role": "tool", "content": "r2"},
    ]
    assert render(codec, msgs, False).endswith(
        "<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n</tool_response><|im_end|>\n"
    )
    assert render(codec, msgs[:1], False).startswith(
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud."
    )


def test_misuse_is_explained(tiny):
    codec = ChatCodec(tiny)
    prompt = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "assistant", "content": "x"}]
    with pytest.raises(PappoError, match="system/user"):
        codec.prompt_ids(prompt)
    with pytest.raises(PappoError, match="'tool' or 'user'"):
        codec.observation_ids({"role": "assistant", "content": "x"}, None)


def test_tokenizer_without_stop_token_is_rejected(tiny):
    bare = qwen_like(tiny)  # a tokenizer whose </tool_call> is plain text cannot stop a turn on it
    bare._tokenizer = Tokenizer.from_str(bare.backend_tokenizer.to_str().replace("</tool_call>", "</call>"))
    with pytest.raises(PappoError, match="'</tool_call>' is not a single token"):
        ChatCodec(bare)
