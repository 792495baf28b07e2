"""CUDA graphs of the one-token decode step (rollout.enforce_eager: false).

Eager decoding launches some 35 kernels a layer from Python for every token: about 1,000 launches a
step at 28 layers, host time that at batch 64 exceeded the GPU's own (1,624 tokens/s measured on an
H200 where reading the weights once a step bounds it near 18k). A captured graph replays a whole
step with one launch (PyTorch, "CUDA Graphs"; vLLM's CUDA graph runner does so for decode batches).

A graph fixes the address and shape of every tensor it touches: the rows, the KV cache's buffers and
the attention's key length. So the step (`Qwen2Decoder.window_step`) attends over a window of the
cache, the positions so far rounded up to WINDOW_STEP, with those past the end masked out, and
writes its new position at a device index. A graph is captured again when its key changes: a new
window, or new cache buffers (rows dropped, a sub-batch split off or merged back, the cache repacked
or grown). One graph is held at a time. Elsewhere than CUDA the same step runs eagerly, with the same
keys counted: what the tests check against the eager decoder.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

# Positions a window grows by: a capture per WINDOW_STEP decoded positions, and at most WINDOW_STEP - 1
# masked positions read per row (at 4k positions, under 6% more attention reads).
WINDOW_STEP = 256

# Counts over the process, for benchmarks (`reset_stats`): graphs: steps whose key had no graph (a
# capture on CUDA); replays: steps served by the graph held; capture_s: seconds spent capturing;
# error (only after one): why a capture failed, after which the process decodes eagerly.
STATS: dict[str, Any] = {"graphs": 0, "replays": 0, "capture_s": 0.0}


def reset_stats() -> dict[str, Any]:
    """Zero `STATS`; returns the counts so far."""
    old = dict(STATS)
    STATS.clear()
    STATS.update(graphs=0, replays=0, capture_s=0.0)
    return old


def decode_window(positions: int, capacity: int) -> int:
    """The cache positions a step attends over: `positions` rounded up to WINDOW_STEP, at most
    the cache's `capacity` (which holds `positions`)."""
    return min(-(-positions // WINDOW_STEP) * WINDOW_STEP, capacity)


Step = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


class DecodeGraphs:
    """Runs `step(ids, positions, bias, at)` -> logits (B, 1, V), captured once per key."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.capture = device.type == "cuda"
        self.key: tuple[Any, ...] | None = None
        self.graph: Any = None  # torch.cuda.CUDAGraph
        self.inputs: list[torch.Tensor] = []  # the graph's static inputs: ids, positions, bias
        self.at = torch.zeros(1, dtype=torch.long, device=device)
        self.out: torch.Tensor | None = None  # the graph's output, overwritten by each replay
        self.stream: Any = None  # torch.cuda.Stream of warm-up and capture

    def step(self, fn: Step, buffers: Sequence[Any], inputs: list[torch.Tensor], at: int) -> torch.Tensor:
        """`fn` at cache position `at`; `buffers`: what the graph's addresses depend on (the window
        and the cache's tensors). Returns logits the next step does not overwrite."""
        key = tuple(x if isinstance(x, int) else (x.data_ptr(), tuple(x.shape)) for x in buffers)
        key += tuple(tuple(x.shape) for x in inputs)
        fresh = key != self.key
        STATS["graphs" if fresh else "replays"] += 1
        if not self.capture:
            self.key = key
            return fn(*inputs, torch.full((1,), at, dtype=torch.long, device=self.device))
        if fresh:
            return self._capture(fn, key, inputs, at)
        for static, x in zip(self.inputs, inputs):
            static.copy_(x)
        self.at.fill_(at)
        self.graph.replay()
        assert self.out is not None
        return self.out.clone()

    def _capture(self, fn: Step, key: tuple[Any, ...], inputs: list[torch.Tensor], at: int) -> torch.Tensor:
        """Run `fn` once eagerly on the capture stream (its result is this step's, and it warms up
        what capture needs: cuBLAS workspaces, kernel choices), then capture it on the same stream
        over static copies of the inputs (PyTorch's documented warm-up-then-capture)."""
        start = time.perf_counter()
        self.graph, self.out, self.key = None, None, None  # free the old graph's pool first
        self.inputs = [x.clone() for x in inputs]
        self.at.fill_(at)
        if self.stream is None:
            self.stream = torch.cuda.Stream(self.device)
        self.stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self.stream):
            logits = fn(*self.inputs, self.at)
        torch.cuda.current_stream(self.device).wait_stream(self.stream)
        logits.record_stream(torch.cuda.current_stream(self.device))  # read there: not reused before
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph, stream=self.stream):
                self.out = fn(*self.inputs, self.at)
        except RuntimeError as e:  # an op that cannot be captured: decode eagerly from here on, said so
            self.capture, self.inputs, self.out = False, [], None
            STATS["error"] = f"{type(e).__name__}: {e}"[:500]
            warnings.warn(f"CUDA graph capture failed, decoding eagerly: {STATS['error']}", stacklevel=2)
            return logits
        self.graph, self.key = graph, key
        STATS["capture_s"] += time.perf_counter() - start
        return logits
