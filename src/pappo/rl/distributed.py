"""Data parallelism across processes (DDP semantics) on torch.distributed, set up by accelerate.

Launch `pappo train` under `accelerate launch --num_processes P` (or torchrun): accelerate's
`PartialState` reads the launcher's environment and opens the process group (gloo on CPU, NCCL
on CUDA) and picks each rank's device. Every rank holds the whole model; each rolls out and
trains on its own shard of the update's tasks (whole GRPO groups), and after every backward the
gradients are summed across ranks, as DDP's reducer does. We do the reduction ourselves (one
flat bucket per optimizer step) instead of wrapping the model in `DistributedDataParallel`
because policy and critic alternate LoRA adapters on one shared base: DDP requires a fixed set of
parameters that require grad, and peft's adapter switch changes it.

Losses are scaled by the GLOBAL token (or row) count before the backward, so summing gradients
gives exactly the single-process gradient of the same minibatch. Statistics are merged with the
same rule the single-process trainer uses (weighted sums; min/max for ratio bounds).
A single process (world size 1) runs the same code with every collective a no-op.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

Device = Literal["cpu", "cuda"]


@dataclass(frozen=True)
class Dist:
    """This process's rank, the world size and the device its model lives on."""

    rank: int = 0
    world_size: int = 1
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    @classmethod
    def from_env(cls, device: Device = "cpu") -> Dist:
        """One process unless a launcher (accelerate launch, torchrun) set WORLD_SIZE > 1."""
        if device == "cuda" and not torch.cuda.is_available():
            from pappo.io import PappoError

            raise PappoError(
                "model.device is 'cuda' but torch sees no CUDA device; set model.device: cpu "
                "in params.yaml, or run where `python -c 'import torch; print(torch.cuda.is_available())'` "
                "prints True"
            )
        if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
            return cls(
                0,
                1,
                torch.device("cuda", torch.cuda.current_device())
                if device == "cuda"
                else torch.device("cpu"),
            )
        from accelerate import PartialState

        state = PartialState(cpu=device == "cpu")  # opens the process group once per process
        atexit.register(_close)  # a rank exiting with the group open can abort in gloo's teardown
        where = torch.device(state.device) if device == "cuda" else torch.device("cpu")
        return cls(state.process_index, state.num_processes, where)

    @property
    def is_main(self) -> bool:
        """Rank 0 writes reports, receipts and checkpoints."""
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world_size > 1

    def shard(self, n: int) -> range:
        """This rank's contiguous block of n items (sizes differ by at most one; rank order)."""
        base, extra = divmod(n, self.world_size)
        start = self.rank * base + min(self.rank, extra)
        return range(start, start + base + (self.rank < extra))

    def all_reduce(self, x: torch.Tensor, op: Literal["sum", "min", "max"] = "sum") -> torch.Tensor:
        """x reduced over ranks (a new tensor; x itself is not changed)."""
        if not self.active:
            return x.clone()
        import torch.distributed as td

        out = x.detach().clone().to(self._comm_device)
        td.all_reduce(out, op={"sum": td.ReduceOp.SUM, "min": td.ReduceOp.MIN, "max": td.ReduceOp.MAX}[op])
        return out.to(x.device)

    def sum(self, value: float) -> float:
        return float(self.all_reduce(torch.tensor(float(value), dtype=torch.float64)))

    def gather(self, obj: Any) -> list[Any]:
        """Every rank's `obj`, in rank order (any picklable object)."""
        if not self.active:
            return [obj]
        import torch.distributed as td

        out: list[Any] = [None] * self.world_size
        td.all_gather_object(out, obj)
        return out

    def sync_grads(self, params: Sequence[torch.nn.Parameter]) -> None:
        """Sum the gradients of `params` over ranks in one flat bucket (DDP's all-reduce).

        A rank with no rows in a minibatch has no gradient: it contributes zeros and receives the
        sum, so every rank steps its optimizer on identical gradients."""
        if not self.active:
            return
        import torch.distributed as td

        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flat = torch.cat([g.reshape(-1).to(torch.float32) for g in grads]).to(self._comm_device)
        td.all_reduce(flat, op=td.ReduceOp.SUM)
        at = 0
        for p, g in zip(params, grads):
            n = g.numel()
            p.grad = flat[at : at + n].view_as(g).to(device=p.device, dtype=p.dtype)
            at += n

    def barrier(self) -> None:
        if self.active:
            import torch.distributed as td

            td.barrier()

    @property
    def _comm_device(self) -> torch.device:
        # NCCL reduces CUDA tensors only; gloo CPU tensors.
        return self.device if self.device.type == "cuda" else torch.device("cpu")


def merge_stats(parts: Sequence[dict[str, float]]) -> dict[str, float]:
    """Per-rank partial stats into one dict: min/max for ratio bounds, else sums (each rank's
    entries are already weighted by its share of the global minibatch)."""
    out: dict[str, float] = {}
    for part in parts:
        for k, x in part.items():
            if k.endswith("ratio_min"):
                out[k] = min(out.get(k, x), x)
            elif k.endswith("ratio_max"):
                out[k] = max(out.get(k, x), x)
            else:
                out[k] = out.get(k, 0.0) + x
    return out


def _close() -> None:
    import torch.distributed as td

    if td.is_available() and td.is_initialized():
        td.destroy_process_group()
