"""The static-shape decode step that CUDA graphs capture (rollout.enforce_eager: false), on CPU: the
same tokens and log-probs as the eager decoder, a window whose tail is masked out, and a new graph
exactly when its key changes. The capture itself needs a GPU (benchmarks/gpu_check.sh)."""

from __future__ import annotations

import pytest
import torch

from pappo.config.policy import RolloutParams
from pappo.policy import decode_graphs, decoder
from pappo.policy.decode_graphs import WINDOW_STEP, DecodeGraphs, decode_window
from test_policy_decoder import feed, tiny
from test_policy_rollout import model, play  # noqa: F401  (model: the fixture play uses)


def test_decode_window_worked_numbers():
    assert WINDOW_STEP == 256
    assert [decode_window(n, 900) for n in (1, 255, 256, 257, 512, 513, 800, 900)] == [
        256,
        256,
        256,
        512,
        512,
        768,
        900,
        900,
    ]
    assert decode_window(40, 64) == 64  # never past the cache's capacity


@pytest.mark.parametrize("kv_cache", ["grow", "static"])
def test_graph_steps_give_the_eager_tokens_and_logprobs(model, fx_params, kv_cache):  # noqa: F811
    """Whole rollouts (multi-turn, rows finishing early: sub-batches split off and merged back, rows
    dropped) with every one-token step through `window_step`: the eager run's tokens, log-probs to
    float32 rounding; most steps reuse the graph held (replays), and there are several graphs (the
    cache's buffers and the window change). Dies if a step's tail or key is wrong."""
    params = RolloutParams(max_new_tokens_per_turn=60, max_tokens_per_episode=900, kv_cache=kv_cache)
    eager, _ = play(model, fx_params, seed=5, params=params)
    decode_graphs.reset_stats()
    graphed, _ = play(model, fx_params, seed=5, params=params, graphs=True)
    stats = decode_graphs.reset_stats()
    assert [t.token_ids for t in graphed] == [t.token_ids for t in eager]
    for a, b in zip(graphed, eager):
        torch.testing.assert_close(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-5, rtol=0)
    assert stats["graphs"] >= 3 and stats["replays"] > 5 * stats["graphs"], stats
    assert "error" not in stats


def _decoder_at(n_past: int, garbage: float | None):
    """A decoder and its cache after a prefill of `n_past` positions (one row left-padded), with the
    positions past the end set to `garbage` (None: left as allocated)."""
    torch.manual_seed(0)
    dec = decoder.Qwen2Decoder(tiny())
    cache = dec.new_cache(capacity=600)
    g = torch.Generator().manual_seed(2)
    chunks = [torch.randint(0, 97, (n,), generator=g).tolist() for n in (n_past, n_past - 5)]
    _, mask, next_pos = feed(
        dec, cache, torch.zeros(2, 0, dtype=torch.long), torch.zeros(2, dtype=torch.long), chunks
    )
    if garbage is not None:
        with torch.inference_mode():  # the cache's tensors are inference tensors
            for store in (cache.k, cache.v):
                for t in store:
                    t[:, :, cache.n :] = garbage
    return dec, cache, mask, next_pos


@pytest.mark.parametrize("n_past", [7, 255, 300])
def test_a_window_step_reads_nothing_past_the_end(n_past: int):
    """One new token over a window of the cache: the eager step's logits, whatever lies in the
    positions past the end (here 1e4, which would swamp the softmax if read)."""
    ids = torch.tensor([[5], [9]])
    outs = []
    for garbage in (None, 1e4, -3.0):
        dec, cache, mask, next_pos = _decoder_at(n_past, garbage)
        step_mask = torch.cat([mask, torch.ones(2, 1, dtype=torch.long)], dim=1)
        pos = next_pos[:, None]
        if garbage is None:
            eager = dec(ids, step_mask, pos, cache, True)
            continue
        dec.graphs = DecodeGraphs(dec.device)
        outs.append(dec(ids, step_mask, pos, cache, True))
        assert cache.n == n_past + 1
    assert torch.equal(outs[0], outs[1])  # the tail is never read: bit for bit
    torch.testing.assert_close(outs[0], eager, atol=1e-5, rtol=0)


def test_the_unmasked_window_would_read_the_tail():
    """The control for the test above: with the window's tail visible (bias 0 there), the garbage
    does change the logits, so that test can see a missing mask."""
    outs = []
    for garbage in (1e4, -3.0):
        dec, cache, _, next_pos = _decoder_at(7, garbage)
        bias = torch.zeros(2, 1, 1, 256)
        at = torch.tensor([cache.n])
        with torch.inference_mode():
            outs.append(dec.window_step(torch.tensor([[5], [9]]), next_pos[:, None], bias, at, cache, 256))
    assert not torch.allclose(outs[0], outs[1])


def test_a_new_graph_exactly_when_its_key_changes():
    """Same window and cache buffers: one graph, then replays; a new window, a replaced buffer (rows
    dropped, a split, a repack) or another batch shape: a new graph."""
    graphs = DecodeGraphs(torch.device("cpu"))
    seen: list[int] = []

    def fn(ids, pos, bias, at):
        seen.append(int(at))
        return torch.zeros(ids.shape[0], 1, 3)

    k = [torch.zeros(2, 1, 512, 4) for _ in range(2)]
    inputs = [
        torch.zeros(2, 1, dtype=torch.long),
        torch.zeros(2, 1, dtype=torch.long),
        torch.zeros(2, 1, 1, 256),
    ]
    decode_graphs.reset_stats()
    for at in range(10, 14):
        graphs.step(fn, (256, *k), inputs, at)
    assert (
        seen == [10, 11, 12, 13]
        and decode_graphs.STATS["graphs"] == 1
        and decode_graphs.STATS["replays"] == 3
    )
    graphs.step(fn, (512, *k), inputs, 14)  # the window grew
    k[1] = torch.zeros(2, 1, 512, 4)  # a buffer replaced
    graphs.step(fn, (512, *k), inputs, 15)
    graphs.step(fn, (512, *k), inputs, 16)
    small = [x[:1] for x in inputs]  # a row dropped
    graphs.step(fn, (512, *(x[:1] for x in k)), small, 17)
    stats = decode_graphs.reset_stats()
    assert (stats["graphs"], stats["replays"]) == (4, 4), stats
