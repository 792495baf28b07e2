"""Qwen2.5-Instruct's chat template, and the token codec the rollout engine builds episodes with.

An episode is one token sequence: the prompt (system + user, rendered with the generation
prompt), then alternately an assistant turn (ids the policy sampled) and an observation (ids the
environment appends). `ChatCodec` produces the environment's pieces so that the whole sequence
decodes to exactly what `apply_chat_template(transcript, tools=TOOLS)` renders: the policy is
trained on the very text a Qwen2.5 checkpoint was tuned on, and sampled ids are never re-tokenized.

Our agents write the whole tool call (Hermes text) into the assistant *content* and never use a
`tool_calls` field, so the template's plain-content branch renders every assistant turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pappo.env.protocol import TOOLS
from pappo.io import PappoError

# Verbatim from the `chat_template` of Qwen/Qwen2.5-*-Instruct's tokenizer_config.json
# (single-quoted Jinja literals hold "\n" escapes, hence the raw string).
QWEN25_CHAT_TEMPLATE = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"""

ENDOFTEXT, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
TOOL_CALL_CLOSE = "</tool_call>"
# A stand-in history before an observation: rendering it with and without the observation and
# keeping the difference gives exactly the template's text for that message after a turn.
_PRELUDE: list[dict[str, Any]] = [{"role": "user", "content": "."}, {"role": "assistant", "content": "."}]


class ChatCodec:
    """Prompt, observation and decoding ids for one tokenizer (ours or a Qwen2.5 hub one)."""

    def __init__(self, tokenizer: Any, tools: list[dict[str, Any]] = TOOLS) -> None:
        self.tokenizer, self.tools = tokenizer, tools
        # A hub tokenizer's own template is the reference; one without a template gets Qwen2.5's.
        self._template = None if getattr(tokenizer, "chat_template", None) else QWEN25_CHAT_TEMPLATE
        self.endoftext_id = self._single_id(ENDOFTEXT)
        self.im_end_id = self._single_id(IM_END)
        self.tool_call_close_id = self._single_id(TOOL_CALL_CLOSE)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.pad_id: int = self.endoftext_id if pad is None else int(pad)
        self.stop_ids: frozenset[int] = frozenset(
            {self.tool_call_close_id, self.im_end_id, self.endoftext_id}
        )
        self._close_text = self._render(_PRELUDE)  # the prelude, ending with '<|im_end|>\n'
        if not self._close_text.endswith(f"{IM_END}\n"):
            raise PappoError(
                "the chat template does not end an assistant turn with '<|im_end|>\\n'; "
                "ChatCodec needs Qwen2.5's ChatML turns"
            )

    def _single_id(self, token: str) -> int:
        ids = self.encode(token)
        if len(ids) != 1:
            name = getattr(self.tokenizer, "name_or_path", "") or type(self.tokenizer).__name__
            raise PappoError(
                f"tokenizer {name}: {token!r} is not a single token (got ids {ids}); use a "
                "Qwen2.5-style tokenizer, or rebuild the tiny one (policy/tokenizer.py)"
            )
        return ids[0]

    def _render(self, messages: Sequence[Mapping[str, Any]], generation_prompt: bool = False) -> str:
        return self.tokenizer.apply_chat_template(
            [dict(m) for m in messages],
            tools=self.tools,
            tokenize=False,
            add_generation_prompt=generation_prompt,
            chat_template=self._template,
        )

    def encode(self, text: str) -> list[int]:
        """Ids of `text` alone (no BOS/EOS added); special-token strings become their ids."""
        return list(
            self.tokenizer.encode(text, add_special_tokens=False, verbose=False)
        )  # long source files are fine

    def prompt_ids(self, messages: list[dict[str, Any]]) -> list[int]:
        """System + user messages rendered by the template with add_generation_prompt=True
        (ends with '<|im_start|>assistant\\n')."""
        if not messages or any(m.get("role") not in ("system", "user") for m in messages):
            roles = [m.get("role") for m in messages]
            raise PappoError(f"prompt_ids takes the opening system/user messages only, got roles {roles}")
        return self.encode(self._render(messages, generation_prompt=True))

    def observation_ids(self, message: dict[str, Any], stopped_on: int | None) -> list[int]:
        """Tokens the environment appends after an assistant turn that ended with token
        `stopped_on` (None: cut by the length limit): close the assistant turn ('<|im_end|>\\n'
        unless it already ended with <|im_end|>), render `message` (role 'tool' or 'user') as
        the template renders it after an assistant turn, then open the next assistant turn.

        A turn that stopped on <|endoftext|> keeps that sampled id (its log-prob is trained) and
        is closed like a cut one; `decode` drops it, so the turn's text is unaffected."""
        return self.encode(self.observation_text(message, stopped_on))

    def observation_text(self, message: Mapping[str, Any], stopped_on: int | None) -> str:
        """The text `observation_ids` encodes."""
        if message.get("role") not in ("tool", "user"):
            raise PappoError(
                f"an observation is a 'tool' or 'user' message, got role {message.get('role')!r}"
            )
        full = self._render([*_PRELUDE, message], generation_prompt=True)
        if not full.startswith(self._close_text):
            raise PappoError(
                "the chat template renders a message differently depending on what "
                "follows it; ChatCodec needs an append-only template like Qwen2.5's"
            )
        close = "\n" if stopped_on == self.im_end_id else f"{IM_END}\n"
        return close + full[len(self._close_text) :]

    def decode(self, ids: Sequence[int]) -> str:
        """Assistant text of a turn's generated ids, <tool_call> tags kept, <|im_end|> and
        <|endoftext|> dropped."""
        drop = {self.im_end_id, self.endoftext_id}
        kept = [int(i) for i in ids if int(i) not in drop]
        return str(self.tokenizer.decode(kept, skip_special_tokens=False, clean_up_tokenization_spaces=False))
