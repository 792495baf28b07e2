"""Typed mirror of params.yaml: one pydantic model per section, every field documented once.

The sections live by layer (`data`, `env`, `policy`, `rl`, `evidence`); this module holds the root,
`Params`, its cross-section checks, and the readers of params.yaml and a profile overlay.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ConfigDict, Field, ValidationError, model_validator

from pappo.config.data import SandboxParams, SynthesisParams, TasksParams, ValidateParams
from pappo.config.env import EnvParams
from pappo.config.evidence import ClaimParams, NumericsParams
from pappo.config.policy import BaseModelParams, LoraParams, ModelParams, RolloutParams
from pappo.config.rl import EvalParams, RLParams, TuneParams, tuned_rl
from pappo.config.section import Section, deep_merge, format_errors
from pappo.io import PappoError


class Params(Section):
    """Root of params.yaml."""

    seed: int = Field(
        0,
        description="Seed of the single-seed experiment (`dvc exp run -S seed=N`): one of "
        "dev_seeds (the experiment refuses a published seed).",
    )
    seeds: list[int] = Field(
        description="Published (confirmatory) seeds: the full matrix, run once per "
        "configuration chosen on dev_seeds; each gets its own split."
    )
    dev_seeds: list[int] = Field(
        default_factory=list,
        description="Tuning seeds of the single-seed experiment, disjoint from seeds; each gets its own "
        "split (docs/tuning.md).",
    )
    tasks: TasksParams
    synthesis: SynthesisParams = SynthesisParams()
    sandbox: SandboxParams = SandboxParams()
    env: EnvParams = EnvParams()
    model: ModelParams = ModelParams()
    lora: LoraParams = LoraParams()
    rollout: RolloutParams = RolloutParams()
    base_model: BaseModelParams = BaseModelParams()
    rl: RLParams = RLParams()
    tune: TuneParams = TuneParams()
    eval: EvalParams = EvalParams()
    claims: list[ClaimParams] = Field(
        default_factory=list, description="Pre-registered claims (pappo audit)."
    )
    numerics: NumericsParams = NumericsParams()
    validate_: ValidateParams = Field(ValidateParams(), alias="validate")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _seeds_unique(self) -> Params:
        if len(set(self.seeds)) != len(self.seeds) or not self.seeds:
            raise ValueError(f"seeds {self.seeds} must be a non-empty list of distinct integers")
        if len(set(self.dev_seeds)) != len(self.dev_seeds):
            raise ValueError(f"dev_seeds {self.dev_seeds} must be distinct integers; drop the repeated one")
        if both := sorted(set(self.seeds) & set(self.dev_seeds)):
            # a seed used for a choice cannot also confirm it (Eimer, Lindauer & Raileanu 2023)
            raise ValueError(
                f"seeds {self.seeds} and dev_seeds {self.dev_seeds} share {both}: a seed is published "
                f"(confirmatory) or for tuning, never both; remove {both} from one of the two lists "
                "(a seed already tuned on belongs in dev_seeds)"
            )
        tuned = tuned_rl(self.rl, self.tune)
        ids = [c.id for c in self.claims]
        if len(set(ids)) != len(ids):
            raise ValueError(f"claims: ids {ids} must be unique; rename the duplicate")
        for c in self.claims:
            if c.min_seed_wins > len(self.seeds):
                raise ValueError(
                    f"claims {c.id}: min_seed_wins {c.min_seed_wins} exceeds the {len(self.seeds)} seeds"
                )
            if c.baseline == c.method:
                raise ValueError(
                    f"claims {c.id}: method and baseline are both {c.method}; compare two methods"
                )
        if self.rollout.calls == "constrained" and (self.env.actions, self.rl.loss_tokens) != (
            "candidates",
            "decisions",
        ):
            # a forced token has probability 1 under the constraint: training on it would teach nothing real
            raise ValueError(
                f"rollout.calls constrained needs env.actions candidates and rl.loss_tokens decisions "
                f"(got {self.env.actions}, {self.rl.loss_tokens}); set them or rollout.calls: sampled"
            )
        _episode_fits_micro_batch("rl", self.rl, self.rollout)
        _episode_fits_micro_batch("tune.rl merged over rl", tuned, self.rollout)
        if self.model.gradient_checkpointing and self.lora.dropout > 0:
            # checkpointing needs train mode, in which LoRA dropout would also perturb the frozen
            # old log-probs, so the first PPO ratios would not be 1
            raise ValueError(
                f"model.gradient_checkpointing needs lora.dropout 0 (it is {self.lora.dropout}); "
                "set lora.dropout: 0.0 or turn checkpointing off"
            )
        return self


def _episode_fits_micro_batch(where: str, rl: RLParams, rollout: RolloutParams) -> None:
    """With rl.use_dynamic_bsz, the token budget holds the longest episode (the memory model's bound)."""
    if rl.use_dynamic_bsz and rl.ppo_max_token_len_per_gpu < rollout.max_tokens_per_episode:
        raise ValueError(
            f"{where}: ppo_max_token_len_per_gpu {rl.ppo_max_token_len_per_gpu} is below "
            f"rollout.max_tokens_per_episode {rollout.max_tokens_per_episode}, so one episode could "
            "exceed a micro-batch; raise it to at least that, or set use_dynamic_bsz: false"
        )


def experiment_params(params: Params) -> Params:
    """The single-seed experiment's params: `rl` with `tune.rl` merged in."""
    return params.model_copy(update={"rl": tuned_rl(params.rl, params.tune)})


def apply_profile(params_path: Path, profile_path: Path, revision: str | None = None) -> Params:
    """params.yaml with a profile overlay merged in (section by section, field by field), and
    `model.revision` set if given; validated, so an unpinned hub revision is refused here."""
    merged = profile_mapping(params_path, profile_path)
    if revision is not None:
        _require_section(merged.setdefault("model", {}), "model", profile_path)
        merged["model"]["revision"] = revision
    try:
        return Params.model_validate(merged)
    except ValidationError as e:
        raise PappoError(f"{params_path} + {profile_path}: invalid params:\n{format_errors(e)}") from e


def profile_mapping(params_path: Path, profile_path: Path) -> dict[str, Any]:
    """params.yaml with a profile overlay merged in, not yet validated: a caller that needs some
    sections of a profile (a benchmark with random weights, no revision to pin) validates those."""
    base, overlay = _yaml_mapping(params_path), _yaml_mapping(profile_path)
    for key, value in overlay.items():
        if isinstance(base.get(key), dict):  # else the merge would replace a whole section by a scalar
            _require_section(value, key, profile_path)
    return deep_merge(base, overlay)


def _require_section(value: Any, key: str, path: Path) -> None:
    if not isinstance(value, dict):
        raise PappoError(
            f"{path}: {key} is {value!r}, not a mapping of {key} fields; write it as `{key}:` followed "
            "by indented `field: value` lines (e.g. `model:` then `  device: cuda`)"
        )


def _yaml_mapping(path: Path, missing: str = "") -> dict[str, Any]:
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise PappoError(f"{path}: not found{missing}") from None
    except yaml.YAMLError as e:
        raise PappoError(f"{path}: not valid YAML: {e}") from e
    if not isinstance(raw, dict):
        raise PappoError(f"{path}: expected a mapping of params sections, got {type(raw).__name__}")
    return raw


def load_params(path: Path = Path("params.yaml")) -> Params:
    """Read and check params.yaml; errors name the file and the field."""
    raw = _yaml_mapping(path, missing="; run from the repository root or pass --params")
    try:
        return Params.model_validate(raw)
    except ValidationError as e:
        raise PappoError(f"{path}: invalid params:\n{format_errors(e)}") from e
