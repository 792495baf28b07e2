"""How much of DVC's per-stage overhead the C YAML parser saves: dvc.lock parsed both ways.

    python benchmarks/dvc_yaml_parse.py [--lock dvc.lock] [--repeats 5]

DVC reads dvc.lock with ruamel.yaml's safe loader several times per stage of a `dvc repro`; the
lock lists every dependency of every stage (about 1 MB for 8 seeds), and the pure-Python parser
takes most of DVC's ~10 s of start-up per stage on a 2-core machine. `ruamel.yaml.clib`
(requirements.lock) gives the safe loader a C parser. Prints the median seconds of each and their
ratio; also checks both give the same data.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from ruamel.yaml import YAML


def timed(text: str, pure: bool, repeats: int) -> tuple[float, object]:
    times, data = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        data = YAML(typ="safe", pure=pure).load(text)
        times.append(time.perf_counter() - t)
    return statistics.median(times), data


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lock", type=Path, default=Path("dvc.lock"))
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    text = args.lock.read_text()
    pure_s, pure = timed(text, True, args.repeats)
    c_s, fast = timed(text, False, args.repeats)
    print(f"{args.lock}: {len(text) / 1e6:.2f} MB, same data both ways: {pure == fast}")
    print(f"pure-Python parser {pure_s:.3f} s, default (C where ruamel.yaml.clib is installed) {c_s:.3f} s")
    print(f"ratio pure / default: {pure_s / c_s:.2f}x")


if __name__ == "__main__":
    main()
