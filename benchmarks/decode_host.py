"""The rollout's host work per decode step, outside the model: does it grow with the positions fed?

    python benchmarks/decode_host.py [--rows 64] [--widths 1024 4096 8192] [--steps 256] [--device cpu]

With CUDA graphs a decode step's GPU work is one launch, and the host's own work in the step (build
the step's ids, positions and attention mask; `decode_batch.DecodeBatch.feed`) runs before each launch: at
batch 64 and the memory-bound floor of ~3.5 ms a step (issue 44), each millisecond of it is a
quarter of the floor. This times `feed` of one token per row with a forward that does nothing,
starting from a mask `width` positions wide, `--steps` steps in a row, best of `--repeats`. Prints
milliseconds a step at each width and, last, `ratio: X.XX`, the widest width's time over the
narrowest's (1.0: the step's host work does not grow with the episode).

Measured on 2 CPU cores (torch 2.13 CPU, the defaults), 2026-12-05: the mask concatenated on the
host each step (3f11ebc) 0.505, 0.733, 0.944 ms at 1024, 4096, 8192 positions (ratio 1.87; on a GPU
the whole mask was also copied to the device each step, 4 MB at 64 x 8192); the mask in a buffer on
the model's device, sized as the KV cache is (this tree) 0.062, 0.064, 0.066 ms (ratio 1.06).
"""

from __future__ import annotations

import argparse
import time

import torch

from pappo.policy.decode_batch import DecodeBatch
from pappo.policy.kv_cache import KVCache


def host_ms(rows: int, width: int, steps: int, repeats: int, device: torch.device) -> float:
    """Best of `repeats`: milliseconds of one `feed` step from a mask `width` positions wide."""

    def forward(ids: torch.Tensor, mask: torch.Tensor, *_: object) -> torch.Tensor:
        return torch.zeros(ids.shape[0], 1, 1)

    best = float("inf")
    for _ in range(repeats):
        batch = DecodeBatch(list(range(rows)), KVCache(1), device)
        batch.mask = torch.ones(rows, width, dtype=torch.long)
        batch.next_pos = torch.full((rows,), width)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        for _ in range(steps):
            batch.feed(forward, [[5]] * rows, 0)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        best = min(best, (time.perf_counter() - start) / steps)
    return 1e3 * best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--widths", type=int, nargs="+", default=[1024, 4096, 8192])
    ap.add_argument("--steps", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    device = torch.device(args.device)
    times = {w: host_ms(args.rows, w, args.steps, args.repeats, device) for w in sorted(args.widths)}
    for width, ms in times.items():
        print(f"host per decode step, {args.rows} rows, {width} positions: {ms:.3f} ms")
    print(f"ratio: {times[max(times)] / times[min(times)]:.2f}")


if __name__ == "__main__":
    main()
