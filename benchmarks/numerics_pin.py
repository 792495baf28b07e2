"""What the pinned CPU numerics cost: the tiny profile's training and decoding, pinned vs not.

    python benchmarks/numerics_pin.py [--params params.yaml] [--repeats 3] [--seq-len 512]

Each setting runs in a fresh process (the settings only count before torch loads), interleaved
over the repeats so machine noise hits every setting alike:
  * machine: nothing pinned (the kernels this CPU picks);
  * pinned: params.yaml `numerics` (what every `pappo` stage runs with);
  * avx2-auto: ATen avx2 and the thread count pinned, MKL left on AUTO (shows what the MKL
    COMPATIBLE branch costs on its own).
Workload: the default tiny model (params `model.tiny`), 4 AdamW steps on 4 x 512 tokens, then 64
decoding steps of a batch of 32 with a KV cache (`--seq-len` shortens both, for a smoke run).
Prints each setting's median seconds, its
fingerprint (src/pappo/numerics.py), and `ratio pinned/machine: X.XX` last.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pappo.config import load_params
from pappo.config.evidence import NumericsParams
from pappo.numerics import PINNED_ENV, requested_env


def workload(tiny: dict[str, Any], seq_len: int = 512) -> dict[str, float]:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    cfg = Qwen2Config(**{k: v for k, v in tiny.items() if k != "seed"})
    model = Qwen2ForCausalLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, cfg.vocab_size, (4, seq_len))
    t0 = time.perf_counter()
    for _ in range(4):
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    t1 = time.perf_counter()
    with torch.no_grad():
        out = model(input_ids=x[:, : seq_len // 2].repeat(8, 1), use_cache=True)
        cache, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
        for _ in range(64):
            out = model(input_ids=tok, past_key_values=cache, use_cache=True)
            cache, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
    return {"train_s": t1 - t0, "decode_s": time.perf_counter() - t1}


def child(settings: NumericsParams, tiny: dict[str, Any], seq_len: int) -> None:
    from pappo.numerics import collect, pin

    pin(settings)
    result = workload(tiny, seq_len)
    print(json.dumps({**result, "numerics": collect(settings).describe()}))


def run(name: str, env: dict[str, str], args: argparse.Namespace) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in PINNED_ENV}
    cmd = [
        sys.executable,
        __file__,
        "--child",
        name,
        "--params",
        str(args.params),
        "--seq-len",
        str(args.seq_len),
    ]
    out = subprocess.run(cmd, env={**clean, **env}, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--seq-len", type=int, default=512, help="training tokens per row (decoding starts from half)"
    )
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    params = load_params(args.params)
    pinned = params.numerics.model_copy(update={"pin": True})
    settings = {
        "machine": NumericsParams(pin=False),
        "pinned": pinned,
        "avx2-auto": pinned.model_copy(update={"mkl_cbwr": "AUTO"}),
    }
    tiny = params.model.tiny.model_dump()
    if args.child:
        child(settings[args.child], tiny, args.seq_len)
        return
    results: dict[str, list[dict]] = {name: [] for name in settings}
    for _ in range(args.repeats):
        for name, s in settings.items():
            results[name].append(run(name, requested_env(s), args))
    median = {}
    for name, rows in results.items():
        median[name] = statistics.median(r["train_s"] + r["decode_s"] for r in rows)
        train, decode = (statistics.median(r[k] for r in rows) for k in ("train_s", "decode_s"))
        print(
            f"{name:9s} total {median[name]:6.2f} s (train {train:5.2f} s, decode {decode:5.2f} s)  {rows[-1]['numerics']}"
        )
    print(f"ratio avx2-auto/machine: {median['avx2-auto'] / median['machine']:.2f}")
    print(f"ratio pinned/machine: {median['pinned'] / median['machine']:.2f}")


if __name__ == "__main__":
    main()
