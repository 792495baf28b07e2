"""benchmarks/gpu_step.py and its gpu_step_record.py: the tiny CPU run end to end (receipt contents,
printed summary), the 7B code path at toy size in bf16 with gradient checkpointing, the profile's
values and the 152064-id vocabulary whose extra ids are never sampled, the receipt outside a git
checkout, the precision flags, the MFU arithmetic by hand, the 7B architecture's size, and the
refusal of --device cuda without CUDA."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from conftest import ROOT, load_benchmark

SCRIPT = ROOT / "benchmarks" / "gpu_step.py"
SMALL = [
    "--config",
    "tiny",
    "--device",
    "cpu",
    "--episodes",
    "1x2",
    "--max-turns",
    "2",
    "--max-new-tokens-per-turn",
    "16",
]
CFG = SimpleNamespace(
    hidden_size=64,
    intermediate_size=160,
    num_hidden_layers=3,
    num_attention_heads=8,
    num_key_value_heads=2,
    vocab_size=1000,
)


class QwenSizedTokenizer:
    """What gpu_step.model_config reads of a tokenizer, at Qwen's vocabulary."""

    bos_token_id, eos_token_id, pad_token_id = None, 1, 2

    def __len__(self) -> int:
        return 152064


def load_bench():
    return load_benchmark("gpu_step")


gs = load_bench()
gsr = load_benchmark("gpu_step_record")  # its receipt and printed lines
gsp = load_benchmark("gpu_step_params")  # its defaults and params


def lora_trainable(m: dict, rank: int) -> int:
    """Policy + critic LoRA on all 7 projections, plus the value head (weight and bias) and the
    critic's reward weight."""
    h, i, hd = m["hidden_size"], m["intermediate_size"], m["hidden_size"] // m["num_attention_heads"]
    kv = m["num_key_value_heads"] * hd
    per_layer = rank * ((h + h) + 2 * (h + kv) + (h + h) + 3 * (h + i))
    return 2 * m["num_hidden_layers"] * per_layer + h + 1 + 1


def check_receipt(rec: dict, out_lines: list[str]) -> None:
    assert rec["schema"] == "pappo.gpu_step/2" and rec["complete"] and rec["error"] is None
    ro, fr, up = (rec["phases"][k] for k in ("rollout", "freeze", "update"))
    b = rec["batch"]
    assert (
        0
        < rec["tokens_generated"]
        == ro["tokens_generated"]
        <= b["episodes"] * b["max_turns"] * b["max_new_tokens_per_turn"]
    )
    assert rec["tokens_trained"] == up["tokens_trained"] == 2 * up["epochs_used"] * fr["sequence_tokens"] > 0
    assert (
        up["epochs_used"] == b["ppo_epochs"] and up["optimizer_steps"] == b["ppo_epochs"] * b["minibatches"]
    )
    for phase in (ro, fr, up):
        assert phase["seconds"] > 0 and phase["tokens_per_s"] > 0
    assert up["tokens_per_s"] == pytest.approx(up["tokens_trained"] / up["seconds"])
    assert rec["mfu"] is None and up["mfu"] is None and fr["mfu"] is None and ro["decode_mfu"] is None
    # freeze: policy + critic (params.yaml kl_coef 0: no reference); update: the same two passes over
    # the same rows every epoch, and LoRA training = 2x forward
    assert fr["passes"] == 2 and fr["flops"] > 0
    assert up["flops"] == pytest.approx(up["epochs_used"] * 2 * fr["flops"])
    assert rec["model"]["parameters_trainable"] == lora_trainable(rec["model"], rec["lora"]["rank"])
    # the ceiling a copy bandwidth sets (an upper bound; a tiny model on CPU is far from memory-bound)
    assert rec["copy_bandwidth_bytes_per_s"] > 0 and ro["decode_rows"] == b["episodes"]
    assert 0 < ro["of_memory_bound"] == pytest.approx(ro["tokens_per_s"] / ro["memory_bound_tokens_per_s"])
    assert any(
        line.startswith(f"memory-bound ceiling at {b['episodes']} rows a step and ") for line in out_lines
    )
    assert rec["peak_memory"]["bytes"] > 2**20 and rec["peak_memory"]["measure"] == "peak RSS"
    assert rec["hardware"]["accelerator"] == "cpu"
    assert re.fullmatch(r"[0-9a-f]{40}", rec["source"]["git_commit"])
    assert "update MFU: n/a (no bf16 peak known for cpu)" in out_lines
    assert rec["peak_memory"]["predicted"]["peak_bytes"] > 0
    # the model at this run's own shapes: no longer than its longest episode, so never above the bound
    at_run, bound = rec["peak_memory"]["predicted_at_run"], rec["peak_memory"]["predicted"]
    assert (
        0 < at_run["rollout_bytes"] <= bound["rollout_bytes"]
        and 0 < at_run["update_bytes"] <= bound["update_bytes"]
    )
    shapes = [line for line in out_lines if "predicted at this run's shapes" in line]
    assert shapes and not any("measured / predicted" in line for line in shapes)  # RSS is not comparable
    seen = b["largest_update_micro_batch"]  # every row once per epoch, padded to its micro-batch's longest
    assert seen["tokens_total"] == up["epochs_used"] * fr["sequence_tokens"] <= seen["padded_total"]
    assert 0 < seen["sampled_tokens"] <= seen["padded_tokens"] <= seen["padded_total"]
    if b["use_dynamic_bsz"]:
        assert seen["padded_tokens"] <= max(b["ppo_max_token_len_per_gpu"], b["max_tokens_per_episode"])
    assert any(line.startswith("update micro-batches: largest ") for line in out_lines)
    gap = rec["logprob_gap"]  # the trainer's own sampler-vs-trainer diagnostic, printed too
    assert set(gap) == {"logprob_gap_mean", "logprob_gap_p99", "logprob_gap_max", "logprob_gap_frac_large"}
    assert (
        0 <= gap["logprob_gap_mean"] <= gap["logprob_gap_max"]
        and gap["logprob_gap_p99"] <= gap["logprob_gap_max"]
    )
    assert 0 <= gap["logprob_gap_frac_large"] <= 1
    assert any(
        line.startswith("sampler vs trainer log-prob gap (rollout/logprob_gap_*): mean ")
        for line in out_lines
    )


def test_tiny_cpu_run_writes_a_receipt(tmp_path):
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *SMALL, "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == f"receipt: {out}"
    rec = json.loads(out.read_text())
    check_receipt(rec, lines)
    assert (rec["config"], rec["dtype"], rec["gradient_checkpointing"]) == ("tiny", "float32", False)
    assert lines[0].startswith("built: vocab 4096, 2 episodes on cpu")
    assert lines[1].startswith(
        "config: tiny (1.31M params incl. embeddings, vocab 4096), device cpu fp32, LoRA r16"
    )
    # printed as each phase ends, before the receipt line
    order = [
        next(i for i, x in enumerate(lines) if x.startswith(p)) for p in ("rollout:", "freeze:", "update:")
    ]
    assert order == sorted(order)
    assert str(tmp_path) not in out.read_text()  # no absolute paths in the receipt


def test_7b_code_path_at_toy_size_in_bf16_with_checkpointing(tmp_path, capsys, monkeypatch):
    """The 7B branch (own Qwen2Config, untied embeddings, checkpointing on by default, the hub
    profile's LoRA and rl, Qwen's 152064-id vocabulary) with the 7B dims swapped for small ones;
    bf16 as on the GPU, so the decoder snapshot's dtype cast runs."""
    import transformers.modeling_utils as hf  # imports torch's `checkpoint` by name; enable binds that

    calls = []
    real = hf.checkpoint
    monkeypatch.setattr(
        hf, "checkpoint", lambda *a, **k: calls.append(torch.is_grad_enabled()) or real(*a, **k)
    )
    dims = dict(
        gs.QWEN25_CODER_7B, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4
    )
    monkeypatch.setattr(gs, "QWEN25_CODER_7B", dims)
    args = [
        *SMALL[2:],
        "--config",
        "7b",
        "--dtype",
        "bfloat16",
        "--minibatches",
        "2",
        "--no-enforce-eager",
        "--out",
        str(tmp_path / "r.json"),
    ]
    assert gs.main(args) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    rec = json.loads((tmp_path / "r.json").read_text())
    check_receipt(rec, lines)
    assert (rec["dtype"], rec["gradient_checkpointing"], rec["model"]["tie_word_embeddings"]) == (
        "bfloat16",
        True,
        False,
    )
    assert any(calls), "gradient checkpointing never ran in a forward that builds a backward"
    m, b = rec["model"], rec["batch"]
    assert (m["vocab_size"], m["tokenizer_size"]) == (152064, 4096)
    assert (rec["lora"]["rank"], b["use_dynamic_bsz"], b["ppo_max_token_len_per_gpu"]) == (
        32,
        True,
        16384,
    ) and b["max_tokens_per_episode"] == 8192  # the profile's
    assert rec["profile"] == "<repo>/profiles/qwen2.5-coder-7b.yaml"  # no absolute path in the receipt
    graphs = b["decode_graphs"]  # --no-enforce-eager: the static step (uncaptured on CPU), counted
    assert b["enforce_eager"] is False and graphs["graphs"] >= 1 and graphs["replays"] > graphs["graphs"]
    assert any(x.startswith(f"decode CUDA graphs: {graphs['graphs']} graphs (") for x in lines)
    assert lines[2].startswith(
        "note: model vocabulary 152064, tokenizer 4096: ids beyond the tokenizer have lm_head bias"
    )


def test_ids_beyond_the_tokenizer_are_never_sampled_and_the_gap_is_unchanged():
    """The 152064-id model's extra ids get probability exactly 0 under the lm_head bias, in the
    sampler (decoder snapshot) and in the trainer (the model's own lm_head)."""
    from pappo.policy.decoder import Qwen2Decoder

    cfg = gs.Qwen2Config(
        vocab_size=600,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=False,
    )
    for dtype in (torch.float32, torch.bfloat16):
        model = gs.build_model(cfg, torch.device("cpu"), dtype, seed=0, ckpt=False, decodable=100)
        model.lm_head.weight.data.mul_(50)  # large logits: the bias must still win
        ids = torch.randint(0, 100, (2, 7))
        trainer_logp = torch.log_softmax(model(ids).logits.float(), -1)
        assert torch.all(trainer_logp[..., 100:].exp() == 0) and torch.all(trainer_logp[..., :100].isfinite())
        dec = Qwen2Decoder(model)
        logits = dec(ids, torch.ones_like(ids), torch.arange(7).expand(2, 7), dec.new_cache(), last_only=True)
        assert torch.all(torch.softmax(logits.float(), -1)[..., 100:] == 0)
    same = gs.build_model(cfg, torch.device("cpu"), torch.float32, seed=0, ckpt=False, decodable=600)
    assert same.lm_head.bias is None  # the tokenizer's own size: Qwen2's unbiased lm_head


def test_the_receipt_outside_a_git_checkout_has_a_null_commit(tmp_path, monkeypatch):
    def no_git(*a, **k):
        raise ValueError("no tracked files under ['src/pappo'] in the repository")

    monkeypatch.setattr(gsr.rc, "collect_source", no_git)
    src = gsr.source_record()
    assert (
        src["git_commit"] is None
        and "not a git checkout" in src["note"]
        and "no tracked files" in src["note"]
    )
    copy = tmp_path / "tree"  # a copy of the sources with no .git at all: hashed, commit null, said so
    copy.mkdir()
    for part in gsr.SOURCE_PATHS[2:]:  # pyproject.toml, requirements.lock
        shutil.copy(gsr.ROOT / part, copy / part)
    monkeypatch.undo()
    monkeypatch.setattr(gsr, "ROOT", copy)
    monkeypatch.setattr(gsr, "SOURCE_PATHS", gsr.SOURCE_PATHS[2:])
    src = gsr.source_record()
    assert (
        src["git_commit"] is None
        and src["note"] == "not a git checkout: commit unknown"
        and src["tree_sha256"]
    )


def test_precision_flags_reach_params_or_are_refused_by_name(capsys):
    from pappo.config.policy import ModelParams
    from pappo.config.rl import RLParams

    args = gs.parse_args([*SMALL[2:], "--config", "tiny", "--logits-fp32", "--rollout-is", "token"])
    if "logits_fp32" in ModelParams.model_fields and "rollout_is_level" in RLParams.model_fields:
        params = gsp.bench_params(args, torch.float32)
        assert params.model.logits_fp32 is True and params.rl.rollout_is_level == "token"
    else:
        with pytest.raises(SystemExit, match="do not have; run without the flag"):
            gsp.bench_params(args, torch.float32)
    params = gsp.bench_params(gs.parse_args([*SMALL[2:], "--config", "tiny"]), torch.bfloat16)
    assert params.model.dtype == "bfloat16"


def test_7b_config_is_qwen25_7b_at_full_vocab_and_flops_count_its_matmuls():
    from transformers import Qwen2ForCausalLM

    cfg = gs.model_config("7b", QwenSizedTokenizer(), params=None)
    with torch.device("meta"):
        model = Qwen2ForCausalLM._from_config(cfg)
    total = sum(p.numel() for p in model.parameters())
    assert total == 7_615_616_512  # Qwen2.5-7B's published parameter count
    h, layers = 3584, 28
    not_matmul = (
        152064 * h + layers * (h + 512 + 512) + (2 * layers + 1) * h
    )  # embedding, q/k/v biases, norms
    assert gsr.model_flops_per_token(cfg, 0, train=False, lora=False) == 2 * (total - not_matmul)


def test_model_flops_per_token_by_hand():
    # head_dim 8: q 64x64, k and v 64x16, o 64x64, MLP 3 x 64x160 per layer; lm_head 64x1000
    n = 3 * (64 * 64 + 2 * 64 * 16 + 64 * 64 + 3 * 64 * 160) + 64 * 1000
    assert n == 186_880
    forward = 2 * n + 2 * 2 * 3 * 64 * 100
    assert gsr.model_flops_per_token(CFG, 100, train=False, lora=False) == forward == 450_560
    assert gsr.model_flops_per_token(CFG, 100, train=True, lora=True) == 2 * forward
    assert gsr.model_flops_per_token(CFG, 100, train=True, lora=False) == 3 * forward
    assert (
        gsr.model_flops_per_token(CFG, 100, train=False, lora=True, lm_head=False) == forward - 2 * 64 * 1000
    )


def test_update_flops_and_mfu_arithmetic():
    r = {
        "rows_tokens": [100, 40],
        "rows_sampled": [30, 10],
        "epochs": 2,
        "generated": 40,
        "decode_rows": 4,
        "sampled_context": 1000,
        "copy_bandwidth": 1e9,
        "steps": 4,
        "rollout_s": 2.0,
        "freeze_s": 0.5,
        "update_s": 1.0,
    }

    def f(t, train, head=True):
        return gsr.model_flops_per_token(CFG, t, train, lora=True, lm_head=head)

    update = 2 * sum(
        2 * t * f(t, True, False) + s * (f(t, True) - f(t, True, False)) for t, s in ((100, 30), (40, 10))
    )
    got = gsr.measures(CFG, r, peak=1e9, kl_passes=0, element_bytes=2)
    assert got["update"]["flops"] == update and got["update"]["mfu"] == pytest.approx(update / 1.0 / 1e9)
    assert got["rollout"]["decode_mfu"] == pytest.approx(40 * 2 * 186_880 / 2.0 / 1e9)
    assert (
        got["update"]["tokens_trained"] == 2 * 2 * 140
        and gsr.measures(CFG, r, None, 0, 2)["update"]["mfu"] is None
    )
    ceiling = 40 * 1e9 / (10 * 186_880 * 2 + 1000 * 192)  # 10 steps of 4 rows; 192 KV bytes a position
    assert got["rollout"]["memory_bound_tokens_per_s"] == pytest.approx(ceiling)
    assert got["rollout"]["of_memory_bound"] == pytest.approx(20 / ceiling)  # 40 tokens in 2 s
    partial = {k: v for k, v in r.items() if k not in ("update_s", "freeze_s", "steps", "epochs")}
    assert set(gsr.measures(CFG, partial, 1e9, 0, 2)) == {"rollout"}  # the receipt written after the rollout


def test_memory_bound_ceiling_by_hand():
    # N = 186,880 matmul weights (above); K and V of 3 layers x 2 heads x 8 dims in bf16 = 192 bytes
    # a position. 10 tokens at 4 rows a step: 3 steps (the last one of 2 rows reads all weights too).
    read = 3 * 186_880 * 2 + 500 * 192
    assert read == 1_217_280
    assert gsr.memory_bound_tokens_per_s(CFG, 2, 4, 10, 500, 1e9) == pytest.approx(10 * 1e9 / read)
    assert gsr.memory_bound_tokens_per_s(CFG, 2, 1, 10, 500, 1e9) < gsr.memory_bound_tokens_per_s(
        CFG, 2, 10, 10, 500, 1e9
    )  # one row a step reads the weights ten times


def test_the_7b_ceiling_is_the_issues_floor():
    """Issue 44: ~15 GB of weights a step at ~4.3 TB/s is ~3.5 ms, about 18k tokens/s at batch 64."""

    cfg = gs.model_config("7b", QwenSizedTokenizer(), params=None)
    layers = 28 * (2 * 3584 * 3584 + 2 * 3584 * 512 + 3 * 3584 * 18944)  # q, o; k, v; gate, up, down
    assert layers == 6_525_288_448 and gsr.matmul_weights(cfg) == layers + 3584 * 152064 == 7_070_285_824
    floor = gsr.memory_bound_tokens_per_s(cfg, 2, 64, 64 * 100, 0, 4.3e12)
    assert 18_000 < floor < 20_000
    # 1,000 positions of context a token add 57,344 KV bytes each: 3.7 GB a step of 64 rows
    assert gsr.memory_bound_tokens_per_s(cfg, 2, 64, 6400, 6400 * 1000, 4.3e12) == pytest.approx(
        6400 * 4.3e12 / (100 * 2 * 7_070_285_824 + 6400 * 1000 * 57_344)
    )


@pytest.mark.parametrize(
    "name, peak",
    [
        ("NVIDIA H200", 989.4e12),
        ("NVIDIA H100 80GB HBM3", 989.4e12),
        ("NVIDIA H100 PCIe", 756e12),
        ("NVIDIA A100-SXM4-80GB", 312e12),
        ("NVIDIA L40S", 362e12),
        ("cpu", None),
        ("NVIDIA GeForce RTX 4090", None),
    ],
)
def test_peak_table(name, peak):
    assert gsr.peak_bf16(name) == peak


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_cuda_refused_without_cuda(tmp_path):
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--config", "tiny", "--device", "cuda", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "no CUDA device" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []
