#!/usr/bin/env bash
# One device check of the hub profile on a GPU (issue 44), at most ~8 minutes on one H200. Run it on an
# H200 (141 GB): the decode bar's baseline was measured on one, and step f may not fit 80 GB (below).
#
# Usage (from the repository root; installs nothing: put the pinned wheels in the interpreter first,
# e.g. `python3 -m pip install -r requirements.lock`, not only on PYTHONPATH: the sandbox workers
# of step c run that interpreter with only src/ on PYTHONPATH):
#
#     OUT=/some/dir bash benchmarks/gpu_check.sh               # the GPU run
#     OUT=/tmp/gc bash benchmarks/gpu_check.sh --device cpu    # every step shrunk to a tiny CPU size
#
# Environment: OUT (where results go; default ./gpu_check-out), PYTHON (default python3),
# GPU_CHECK_BUDGET_S (the whole script's wall budget; default 480, 1500 with --device cpu: a step
# gets what is left, never more than its own limit), GPU_CHECK_TOKENS (steps a and f:
# rollout.max_tokens_per_episode; default 4096 to fit the budget; 8192 is the profile's own and takes
# ~2x as long).
#
# Steps (in the order a, e, f, c, b: this issue's first), each under its own `timeout`, each printing its
# numbers as it goes; a failed step is reported and the next one runs:
#   a. benchmarks/gpu_step.py --config 7b in bf16: profiles/qwen2.5-coder-7b.yaml as it runs (LoRA r32,
#      64 episodes, micro-batches of 16384 padded tokens, minibatches 4) at Qwen's 152064-id
#      vocabulary, episodes run to the token limit; one PPO epoch (the profile's 2 would double the
#      update time);
#   b. the precision sweep (sampler-vs-trainer log-prob gap, tokens/s, MFU): bf16, fp16,
#      bf16 + --logits-fp32 at 16x4 episodes, 2 turns x 256 tokens, one epoch (fp16 and
#      --logits-fp32 need the model.dtype / model.logits_fp32 knobs: refused by name without them);
#   e. benchmarks/decode_graphs.py --config 7b: decoding eager against CUDA graphs
#      (rollout.enforce_eager false) on the same 64 episodes x 4 turns x 512 tokens, the shape of the
#      first H200 measurement (1,624 tokens/s): tokens/s of each, and whether they agree;
#   f. step a without gradient checkpointing, micro-batches of 8192 padded tokens (the update
#      predicted at 70.0 GiB at 8192-token episodes, 79.4 GiB at GPU_CHECK_TOKENS' default 4096,
#      where the sampled share and so the logits are larger): the update-MFU lever checkpointing's
#      recompute costs, measured against a;
#   c. `pappo train --method pappo --seed 0` on the tiny profile with model.device cuda and the real
#      sandbox (needs models/base and data/*/manifest.lock.json: build them first and carry them);
#   d. a table: tokens/s, MFU, measured vs predicted peak memory, log-prob gaps; then issue 44's bars,
#      each met / NOT met (the decode bar only for 64 episodes on an H200, where its 1,624 tokens/s
#      baseline was measured: run it on an H200; every GPU gets its share of the memory-bound ceiling).
# Results in $OUT (4 files): gpu_check.json (every receipt bundled, the table, each step's exit
# status and seconds), gpu_check.txt (the table), gpu_check.log (all output), params-train.yaml.
set -u
DEVICE=cuda
if [ "${1:-}" = "--device" ] && [ -n "${2:-}" ]; then DEVICE=$2; fi
OUT=${OUT:-gpu_check-out}
PY=${PYTHON:-python3}
BUDGET=${GPU_CHECK_BUDGET_S:-$([ "$DEVICE" = cpu ] && echo 1500 || echo 480)}
TOKENS=${GPU_CHECK_TOKENS:-4096}
mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
LOG="$OUT/gpu_check.log"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
START=$(date +%s)
: > "$LOG"
: > "$WORK/steps.tsv"

say() { echo "$@" | tee -a "$LOG"; }

# step NAME LIMIT_S CMD...: runs under min(LIMIT_S, what is left of the budget); records rc and seconds
step() {
    local name=$1 limit=$2
    shift 2
    local left=$((BUDGET - ($(date +%s) - START)))
    if [ "$left" -lt 20 ]; then
        say "== $name: skipped (budget of ${BUDGET} s spent)"
        printf '%s\t%s\t%s\n' "$name" skipped 0 >> "$WORK/steps.tsv"
        return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    say "== $name (limit ${limit} s): $*"
    local t0=$(date +%s)
    timeout -k 10 "$limit" "$@" 2>&1 | tee -a "$LOG"
    local rc=${PIPESTATUS[0]}
    local dt=$(($(date +%s) - t0))
    say "== $name: exit $rc after ${dt} s"
    printf '%s\t%s\t%s\n' "$name" "$rc" "$dt" >> "$WORK/steps.tsv"
}

if [ "$DEVICE" = cpu ]; then  # every step at a tiny size, to test the script without a GPU
    A=(--config tiny --device cpu --profile profiles/qwen2.5-coder-7b.yaml --episodes 1x2 --max-turns 2
       --max-new-tokens-per-turn 16 --max-tokens-per-episode 1536 --ppo-epochs 1
       --minibatches 1)
    B=(--config tiny --device cpu --episodes 1x2 --max-turns 2 --max-new-tokens-per-turn 16 --ppo-epochs 1)
    E=(--config tiny --device cpu)
    F=(--ppo-max-token-len-per-gpu 2048)
    LIMITS=(300 200 400 200 300)  # seconds for a, each b, c, e, f
else
    A=(--config 7b --device cuda --dtype bfloat16 --max-tokens-per-episode "$TOKENS" --ppo-epochs 1)
    B=(--config 7b --device cuda --episodes 16x4 --max-turns 2 --max-new-tokens-per-turn 256 --ppo-epochs 1)
    E=(--config 7b --device cuda --dtype bfloat16)
    F=(--ppo-max-token-len-per-gpu 8192)
    LIMITS=(270 90 120 150 200)
fi

TORCH=$($PY -c 'import torch
name = torch.cuda.get_device_name() if torch.cuda.is_available() else "no cuda"
print("torch", torch.__version__, name)' 2>&1)
say "gpu_check: device $DEVICE, budget ${BUDGET} s, out $OUT, $TORCH"
step a_profile "${LIMITS[0]}" "$PY" benchmarks/gpu_step.py "${A[@]}" --out "$WORK/a_profile.json"
step e_decode_graphs "${LIMITS[3]}" "$PY" benchmarks/decode_graphs.py "${E[@]}" --out "$WORK/e_decode_graphs.json"
step f_no_checkpointing "${LIMITS[4]}" "$PY" benchmarks/gpu_step.py "${A[@]}" --no-gradient-checkpointing "${F[@]}" \
    --out "$WORK/f_no_checkpointing.json"
# c: the tiny profile's params with model.device set to the device under test
"$PY" - "$DEVICE" "$OUT/params-train.yaml" <<'EOF' 2>&1 | tee -a "$LOG"
import sys, yaml
data = yaml.safe_load(open("params.yaml"))
data["model"]["device"] = sys.argv[1]
open(sys.argv[2], "w").write("# params.yaml with model.device: %s (benchmarks/gpu_check.sh)\n" % sys.argv[1]
                             + yaml.safe_dump(data, sort_keys=False))
EOF
if [ -d models/base ]; then
    step c_train "${LIMITS[2]}" "$PY" -m pappo.cli train --method pappo --seed 0 --out "$WORK/c_train" \
        --params "$OUT/params-train.yaml"
else
    say "== c_train: skipped: models/base is missing (build it with the base_model stage and carry it)"
    printf '%s\t%s\t%s\n' c_train missing-models-base 0 >> "$WORK/steps.tsv"
fi

step b_bf16 "${LIMITS[1]}" "$PY" benchmarks/gpu_step.py "${B[@]}" --dtype bfloat16 --out "$WORK/b_bf16.json"
step b_fp16 "${LIMITS[1]}" "$PY" benchmarks/gpu_step.py "${B[@]}" --dtype float16 --out "$WORK/b_fp16.json"
step b_bf16_logits_fp32 "${LIMITS[1]}" "$PY" benchmarks/gpu_step.py "${B[@]}" --dtype bfloat16 --logits-fp32 \
    --out "$WORK/b_bf16_logits_fp32.json"

# d: the table and the bundle (reads whatever the steps left)
"$PY" benchmarks/gpu_check_table.py "$WORK" "$OUT" 2>&1 | tee -a "$LOG"
say "gpu_check: done in $(($(date +%s) - START)) s; results in $OUT"
rm -rf "$WORK"
