"""benchmarks/gpu_check.sh's last step: one table and one JSON bundle from what its steps left.

    python benchmarks/gpu_check_table.py WORK_DIR OUT_DIR

Reads WORK_DIR/steps.tsv (step, exit status, seconds), the gpu_step receipts WORK_DIR/<step>.json
(complete or partial), the decode A/B WORK_DIR/e_decode_graphs.json (benchmarks/decode_graphs.py)
and the train run WORK_DIR/c_train/{receipt,report}.json; writes
OUT_DIR/gpu_check.json (all of it, plus the memory model's prediction for the full hub profile)
and OUT_DIR/gpu_check.txt (the table, also printed), ending with issue 44's bars, each judged
met / NOT met from the receipts that measure it (the decode bar only for 64 episodes on an H200,
where its baseline was measured; every GPU gets the share of its memory-bound ceiling). Missing
pieces are rows saying so.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pappo.config import Params, profile_mapping
from pappo.io import atomic_write_json, atomic_write_text
from pappo.policy import memory

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/common.py
from common import graph_counts

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30
# Issue 44's bars: decoding at least 4x the 1,624 tokens/s measured eagerly at batch 64 on an H200
# (c24b699), update MFU at least 35%, each phase's peak memory within 15% of the model's prediction.
DECODE_BASE, DECODE_GPU, DECODE_ROWS = 1624, "H200", 64
DECODE_BAR, MFU_BAR, MEMORY_TOLERANCE = 4 * DECODE_BASE, 0.35, 0.15


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, fmt: str = "{:.0f}") -> str:
    return "-" if x is None else fmt.format(x)


def step_row(name: str, rc: str, seconds: str, rec: dict[str, Any] | None) -> str:
    """One table row of a gpu_step receipt (or of its absence)."""
    if not rec or "phases" not in rec:
        why = (rec or {}).get("error") or "no receipt"
        return f"| {name} | {rc} | {seconds} | {why} ||||||||"
    ph, mem, gap = rec["phases"], rec["peak_memory"], rec.get("logprob_gap") or {}
    ro, fr, up = ph.get("rollout", {}), ph.get("freeze", {}), ph.get("update", {})
    dtype = rec["dtype"] + (" +logits_fp32" if rec.get("knobs", {}).get("logits_fp32") else "")
    cells = [
        name,
        rc,
        seconds,
        dtype,
        _num(ro.get("tokens_per_s")),
        _pct(ro.get("decode_mfu")),
        _pct(fr.get("mfu")),
        f"{_num(up.get('tokens_per_s'))} / {_pct(up.get('mfu'))}",
        f"{mem['bytes'] / GIB:.1f} / {mem['predicted']['peak_bytes'] / GIB:.1f}",
        phase_memory(mem),
        f"{_num(gap.get('logprob_gap_mean'), '{:.3g}')} / {_num(gap.get('logprob_gap_max'), '{:.3g}')}",
    ]
    return "| " + " | ".join(cells) + " |"


def phase_memory(mem: dict[str, Any]) -> str:
    """Rollout and update peaks, measured / predicted at the run's shapes (the 15% check), where
    gpu_step compared them (a CUDA run)."""
    ratios = mem.get("measured_over_predicted") or {}
    at_run, per = mem.get("predicted_at_run") or {}, mem.get("per_phase_bytes") or {}
    if not ratios:
        return "-"
    cells = [
        f"{per[k] / GIB:.1f} / {at_run[f'{k}_bytes'] / GIB:.1f} ({ratios[k]:.2f})" if k in ratios else "-"
        for k in ("rollout", "update")
    ]
    return "; ".join(cells)


def decode_line(rc: str, seconds: str, rec: dict[str, Any] | None) -> str:
    """The line of the decode A/B (eager against CUDA graphs), or of what of it finished."""
    if not rec or "eager" not in rec:
        return f"decode, eager vs CUDA graphs: exit {rc}, {seconds} s, no receipt"
    shape = rec["shape"]
    head = (
        f"decode, eager vs CUDA graphs ({shape['episodes']} episodes x {shape['turns']} turns x "
        f"{shape['tokens_per_turn']} tokens, {rec['dtype']}): exit {rc}, {seconds} s; eager "
        f"{_side(rec['eager'])}"
    )
    if "ratio" not in rec:
        return head + "; the graphed side did not finish"
    return (
        f"{head}, graphed {_side(rec['graphed'])} (x{rec['ratio']:.2f}; {graph_counts(rec['graphed'])}); "
        f"{rec['identical_episodes']}/{shape['episodes']} episodes identical, max |log-prob difference| "
        f"before a change {rec['logprob_max_abs_diff_before_change']:.3g}"
    )


def _side(side: dict[str, Any]) -> str:
    peak = side.get("peak_bytes")
    return f"{side['tokens_per_s']:.0f} tokens/s" + ("" if peak is None else f" (peak {peak / GIB:.1f} GiB)")


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def decode_bar(rec: dict[str, Any] | None) -> str:
    """The decode bar, judged on the graphed side of step e: 64 episodes decoded together, on an H200
    (where the 1,624 was measured); its share of the memory-bound ceiling on any GPU."""
    side = (rec or {}).get("graphed")
    if not side:
        return "decode with CUDA graphs (e): not measured"
    name, rows = rec.get("device_name", "?"), rec["shape"]["episodes"]
    line = (
        f"decode with CUDA graphs (e, {rows} episodes, {name}): {side['tokens_per_s']:.0f} tokens/s, "
        f"{side['of_memory_bound']:.1%} of the memory-bound {side['memory_bound_tokens_per_s']:.0f} "
        f"at {rec['copy_bandwidth_bytes_per_s'] / 1e12:.2f} TB/s; bar {DECODE_BAR} ({DECODE_BASE} x 4, "
        f"eager at batch {DECODE_ROWS} on an {DECODE_GPU}): "
    )
    if DECODE_GPU not in name or rows != DECODE_ROWS:
        return line + f"not judged here (the bar holds for {DECODE_ROWS} episodes on an {DECODE_GPU})"
    return line + _verdict(side["tokens_per_s"] >= DECODE_BAR)


def update_bar(name: str, rec: dict[str, Any] | None) -> str:
    """The update-MFU bar of one gpu_step receipt."""
    mfu = ((rec or {}).get("phases") or {}).get("update", {}).get("mfu")
    if mfu is None:
        why = "no update measured" if not (rec or {}).get("phases", {}).get("update") else "no bf16 peak"
        return f"update MFU ({name}): not judged ({why})"
    return f"update MFU ({name}, {rec['device_name']}): {_pct(mfu)}; bar {_pct(MFU_BAR)}: {_verdict(mfu >= MFU_BAR)}"


def memory_bar(name: str, rec: dict[str, Any] | None) -> str:
    """The memory bar of one gpu_step receipt: each phase's measured / predicted peak at the run's shapes."""
    ratios = ((rec or {}).get("peak_memory") or {}).get("measured_over_predicted") or {}
    if not ratios:
        return f"peak memory ({name}): not judged (no CUDA peaks measured)"
    cells = ", ".join(f"{k} {v:.2f}" for k, v in ratios.items())
    verdict = _verdict(all(abs(v - 1) <= MEMORY_TOLERANCE for v in ratios.values()))
    head = f"peak memory ({name}), measured / predicted at the run's shapes"
    return f"{head}: {cells}; bar within {MEMORY_TOLERANCE:.0%}: {verdict}"


def bar_lines(receipts: dict[str, Any]) -> list[str]:
    """Issue 44's bars, each judged from the receipts that measure it, or said to be unmeasured."""
    lines = ["issue 44's bars:", "- " + decode_bar(receipts.get("e_decode_graphs"))]
    for name in ("a_profile", "f_no_checkpointing"):
        lines += ["- " + update_bar(name, receipts.get(name)), "- " + memory_bar(name, receipts.get(name))]
    return lines


def full_profile_prediction() -> dict[str, Any]:
    data = profile_mapping(ROOT / "params.yaml", ROOT / "profiles" / "qwen2.5-coder-7b.yaml")
    data["model"]["revision"] = "0" * 40  # any pinned commit: the dims are the known 7B's
    return memory.predict(Params.model_validate(data), memory.QWEN25_CODER_7B).as_dict()


def main(work: Path, out: Path) -> int:
    steps = [line.split("\t") for line in (work / "steps.tsv").read_text().splitlines() if line.strip()]
    bundle: dict[str, Any] = {"schema": "pappo.gpu_check/1", "steps": {}}
    head = (
        "| step | exit | s | dtype | rollout tok/s | decode MFU | freeze MFU | update tok/s / MFU "
        "| peak GiB measured / predicted | rollout; update GiB measured / predicted at the run's shapes "
        "| log-prob gap mean / max |"
    )
    rows, notes = [head, "|" + "---|" * 11], []
    for name, rc, seconds in steps:
        rec = _load(work / f"{name}.json")
        bundle["steps"][name] = {"exit": rc, "seconds": int(seconds), "receipt": rec}
        if name == "e_decode_graphs":
            notes.append(decode_line(rc, seconds, rec))
        elif name != "c_train":
            rows.append(step_row(name, rc, seconds, rec))
    rows += ["", *notes] if notes else []
    train = {k: _load(work / "c_train" / f"{k}.json") for k in ("receipt", "report")}
    bundle["steps"].setdefault("c_train", {}).update(train)
    report = train["report"] or {}
    success = ((report.get("final_eval") or {}).get("success") or {}).get("mean")
    rc = bundle["steps"]["c_train"].get("exit", "-")
    seconds = bundle["steps"]["c_train"].get("seconds", "-")
    rows.append(
        f"\ntrain (tiny profile, pappo seed 0): exit {rc}, {seconds} s, "
        f"held-out success {_num(success, '{:.2f}')}"
    )
    full = full_profile_prediction()
    bundle["predicted_full_profile"] = full
    rows.append(
        f"memory model, the full hub profile (64 x 8192 tokens): predicted peak {full['peak_gib']} "
        f"GiB (rollout {full['rollout_bytes'] / GIB:.1f}, update {full['update_bytes'] / GIB:.1f})"
    )
    rows += ["", *bar_lines({k: v.get("receipt") for k, v in bundle["steps"].items()})]
    table = "\n".join(rows)
    bundle["table"] = table
    print(table, flush=True)
    atomic_write_text(out / "gpu_check.txt", table + "\n")
    atomic_write_json(out / "gpu_check.json", bundle)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
