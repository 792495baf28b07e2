"""benchmarks/id_slot.py: a policy whose id ignores the context reads as context-free (TV 0), one
that copies the last id it saw reads as dependent on the reverted id and on its thought's id."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
import torch

from conftest import FIXTURES, fixture_params, load_benchmark
from pappo.env.protocol import tools_for
from pappo.env.vec import task_env
from pappo.policy.chat import ChatCodec
from pappo.policy.tokenizer import protocol_files, train_tokenizer, warmup_files
from pappo.tasks.store import TaskStore
from test_env_episode import FakeGrader

K = 4


class IdModel:
    """Logits favour one id: a fixed one ('prior'), or the last id the text named or applied ('copy')."""

    def __init__(self, codec: ChatCodec, id_tokens: list[int], vocab: int, mode: str) -> None:
        self.codec, self.ids, self.vocab, self.mode = codec, id_tokens, vocab, mode

    def __call__(self, input_ids: torch.Tensor) -> SimpleNamespace:
        logits = torch.zeros(1, input_ids.shape[1], self.vocab)
        named = re.findall(r'(?:"id": |candidate )(\d)', self.codec.decode(input_ids[0].tolist()))
        favour = self.ids[int(named[-1]) - 1] if self.mode == "copy" and named else self.ids[0]
        logits[0, -1, favour] = 20.0
        return SimpleNamespace(logits=logits)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory):
    params = fixture_params(tmp_path_factory.mktemp("idslot"))
    env_params = params.env.model_copy(
        update={
            "actions": "candidates",
            "max_turns": 5,
            "candidates": params.env.candidates.model_copy(update={"k": K}),
        }
    )
    store = TaskStore.from_params(params, "repofix")
    tok = train_tokenizer([*protocol_files(), *warmup_files(FIXTURES / "warmup" / "repos")], 1024)
    codec = ChatCodec(tok, tools_for("candidates"))
    id_tokens = load_benchmark("id_slot").id_token_ids(codec, K)
    env = task_env(store, sorted(store.tasks)[0], env_params, seed=3)
    env.grade_fn = FakeGrader()
    return codec, env, id_tokens, len(tok)


def test_a_fixed_prior_is_context_free(setup):
    codec, env, id_tokens, vocab = setup
    out = load_benchmark("id_slot").probe_board(
        IdModel(codec, id_tokens, vocab, "prior"), codec, env, id_tokens
    )
    assert out["post_revert_tv"] == pytest.approx(0.0, abs=1e-6) and out["call_tv"] == pytest.approx(
        0.0, abs=1e-6
    )
    assert (
        len(out["post_revert"]) == K - 1 and len(out["call"]) == K
    )  # every wrong id reverted, every thought id
    assert all(p[0] > 0.99 for p in out["post_revert"].values())


def test_a_copying_policy_depends_on_the_reverted_and_the_thoughts_id(setup):
    codec, env, id_tokens, vocab = setup
    out = load_benchmark("id_slot").probe_board(
        IdModel(codec, id_tokens, vocab, "copy"), codec, env, id_tokens
    )
    assert out["p_reverted"] > 0.99 and out["p_thought_id"] > 0.99
    assert out["post_revert_tv"] > 0.99 and out["call_tv"] > 0.99
