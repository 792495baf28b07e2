"""Every documented benchmark command keeps running: each `benchmarks/*.py` script, as its docstring
gives it, on the default params.yaml at its smallest size, must exit 0 and print its last line in
the documented form. A change of defaults that breaks a script (as the candidates tier once broke
rollout_throughput.py and procedure_ceiling.py) fails here. Sizes are cut, never the code path.

Scripts not run here are listed with the reason, and a new script must join one of the lists.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, needs_namespaces
from pappo.config import load_params

BENCH = ROOT / "benchmarks"

# The smallest documented command of each script, and the regex its last line must match.
SMOKE = {
    "dvc_yaml_parse.py": (["--repeats", "1"], r"ratio pure / default: \d+\.\d\dx"),
    "rollout_throughput.py": (["--random-weights", "--episodes", "2"], r"ratio: \d+\.\d"),
    "numerics_pin.py": (["--repeats", "1", "--seq-len", "16"], r"ratio pinned/machine: \d+\.\d\d"),
    "sandbox_latency.py": (["--tasks", "1", "--repeats", "1"], r"ratio with hidden checks: \d+\.\d"),
    "semantic_hacks.py": (["--tasks", "3"], r"success under attack: 0"),
    "procedure_ceiling.py": (["--tasks", "all", "--limit", "2", "--seeds", "1"], r"ceiling: \d\.\d\d"),
    "episode_cost.py": (
        ["--random-weights", "--stand-in-grader", "--smallest", "--methods", "ppo"],
        r"per episode cpu_s: train \d+\.\d{3} eval \d+\.\d{3}",
    ),
    "decode_graphs.py": (["--config", "tiny", "--device", "cpu", "--episodes", "2"], r"ratio: \d+\.\d\d"),
    "bundle_memory.py": (["--adapter-mib", "1"], r"ratio peak heap/adapter: \d+\.\d{3}"),
    "decode_host.py": (
        ["--rows", "4", "--widths", "16", "64", "--steps", "8", "--repeats", "1"],
        r"ratio: \d+\.\d\d",
    ),
}
SANDBOXED = {"sandbox_latency.py", "semantic_hacks.py", "procedure_ceiling.py"}
NOT_HERE = {
    "common.py": "a module the scripts import, not a command",
    "power_design.py": "tests/test_power_design.py runs it on pilot run folders it builds",
    "gpu_step.py": "tests/test_gpu_step.py runs it (--config tiny)",
    "gpu_step_record.py": "a module gpu_step.py imports (its receipt and printed lines), not a command",
    "gpu_step_params.py": "a module gpu_step.py imports (its defaults and params), not a command",
    "confirmation.py": "tests/test_confirmation.py runs its command on run folders it builds",
    "id_slot.py": "needs `dvc repro` outputs (the manifest lock, models/base); "
    "tests/test_id_slot.py checks its probe",
    "post_revert_choice.py": "needs `dvc repro` outputs (the lock, models/base, run adapters); "
    "tests/test_post_revert_choice.py checks its parsing",
    "omp_wait.py": "runs `pappo train` four times on `dvc repro` outputs (minutes); run by hand",
    "gpu_check_table.py": "tests/test_gpu_check.py runs it on receipts it writes",
    "micro_batches.py": "tests/test_rl_micro_batches.py runs its comparison at a tiny size",
    "memory_check.py": "four measured processes of up to 1.6 GiB each (a minute of CPU, its numbers in its "
    "docstring); run by hand; tests/test_policy_memory.py tests the model it checks and its rollout",
}


def run_script(name: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    # One intra-op thread: the suite's two workers share the cores (a benchmark's own timing is
    # not under test here, only that it runs and reports).
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.run(
        [sys.executable, str(BENCH / name), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_every_benchmark_script_is_smoked_or_says_why_not() -> None:
    scripts = {p.name for p in BENCH.glob("*.py")}
    assert scripts == set(SMOKE) | set(NOT_HERE), "add the new script to SMOKE (or NOT_HERE, with the reason)"
    assert not set(SMOKE) & set(NOT_HERE)


def _check(name: str) -> str:
    args, last = SMOKE[name]
    proc = run_script(name, args)
    assert proc.returncode == 0, f"{name} {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    lines = proc.stdout.strip().splitlines()
    assert lines and re.fullmatch(last, lines[-1]), f"{name}: last line {lines[-1:]} is not {last!r}"
    return proc.stdout


def test_dvc_yaml_parse_reads_the_committed_lock_both_ways() -> None:
    out = _check("dvc_yaml_parse.py")
    assert "same data both ways: True" in out, out


@pytest.mark.slow
def test_rollout_throughput_runs_on_the_default_params() -> None:
    out = _check("rollout_throughput.py")
    found = re.finditer(r"^(batched|naive):\s+(\d+) tokens", out, re.M)
    tokens = {m.group(1): int(m.group(2)) for m in found}
    assert tokens.keys() == {"batched", "naive"} and min(tokens.values()) > 0, out


@pytest.mark.slow
def test_episode_cost_runs_on_the_default_params() -> None:
    out = _check("episode_cost.py")
    # every phase of a critic method's training episode, then the evaluation's
    phases = re.findall(r"^ppo (rollout|critic_warmup|freeze|optimise)\s+\d+\.\d{3}\s+\d+\.\d{3}$", out, re.M)
    assert phases == ["rollout", "critic_warmup", "freeze", "optimise"], out
    ev = load_params(ROOT / "params.yaml").eval  # --smallest: 2 eval tasks, each on every board and sample
    episodes = 2 * (ev.boards + ev.samples)
    assert re.search(rf"^eval episode\s+\d+\.\d{{3}}\s+\d+\.\d{{3}}\s+\({episodes} episodes\)$", out, re.M), (
        out
    )


@pytest.mark.slow
def test_numerics_pin_runs_on_the_default_params() -> None:
    out = _check("numerics_pin.py")
    assert {line.split()[0] for line in out.splitlines()[:3]} == {"machine", "pinned", "avx2-auto"}, out


@pytest.mark.slow
@needs_namespaces
def test_sandbox_latency_runs_on_the_default_params() -> None:
    out = _check("sandbox_latency.py")
    assert re.search(r"^ratio: \d+\.\d$", out, re.M), out


@pytest.mark.slow
@needs_namespaces
def test_semantic_hacks_runs_on_the_default_params() -> None:
    out = _check("semantic_hacks.py")
    # the attacks ran on the tasks asked for, no more
    assert re.search(r"^always_equal\s+tasks\s+[1-3]\b", out, re.M), out


@pytest.mark.slow
@needs_namespaces
def test_procedure_ceiling_runs_on_the_default_params() -> None:
    out = _check("procedure_ceiling.py")
    assert re.search(r"^oracle\s+success 1\.000 \(2/2\)", out, re.M), out
    assert re.search(r"^submit\s+success 0\.000 \(0/2\)", out, re.M), out


@pytest.mark.slow
def test_decode_graphs_runs_on_the_default_params() -> None:
    """On CPU the static-shape step runs uncaptured: both sides draw the same tokens."""
    out = _check("decode_graphs.py")
    assert re.search(r"^agreement: 2/2 episodes identical", out, re.M), out
    assert re.search(r"^graphed: \d+ tokens .*; [1-9]\d* graphs \(.*\), [1-9]\d* replays$", out, re.M), out


def test_decode_host_times_each_width() -> None:
    """One line per width, rows and width as asked, then the ratio of the widest to the narrowest."""
    out = _check("decode_host.py")
    found = re.findall(r"^host per decode step, 4 rows, (\d+) positions: (\d+\.\d{3}) ms$", out, re.M)
    assert [int(w) for w, _ in found] == [16, 64] and all(float(ms) > 0 for _, ms in found), out


def test_bundle_memory_releases_verifies_and_unpacks() -> None:
    """One line per step with its time and peak heap, the zip's size, then the ratio."""
    out = _check("bundle_memory.py")
    steps = re.findall(
        r"^(release|verify zip|unpack|verify folder) +\d+\.\d s  peak heap +\d+\.\d MiB$", out, re.M
    )
    assert steps == ["release", "verify zip", "unpack", "verify folder"], out
