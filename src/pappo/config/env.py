"""params.yaml's `env` section: the tool-using repair environment, its tool costs and rewards."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pappo.config.section import Section


class ToolCostParams(Section):
    """Weight of each tool call in the `tool_cost` metric (an unparsable turn costs `parse_error`)."""

    view: float = Field(1.0, ge=0, description="Cost of one view call.")
    search: float = Field(1.0, ge=0, description="Cost of one search call.")
    str_replace: float = Field(1.0, ge=0, description="Cost of one str_replace call.")
    run_tests: float = Field(2.0, ge=0, description="Cost of one run_tests call.")
    submit: float = Field(0.5, ge=0, description="Cost of the submit call.")
    apply: float = Field(1.0, ge=0, description="Cost of one apply call (candidates mode).")
    revert: float = Field(1.0, ge=0, description="Cost of one revert call (candidates mode).")
    parse_error: float = Field(1.0, ge=0, description="Cost of a turn with no valid tool call.")


class RewardParams(Section):
    """Terminal and per-turn (process) rewards; process weights are per event."""

    success: float = Field(1.0, description="Terminal reward when the graded patch passes.")
    edit_progress: float = Field(
        0.2, description="Times the drop in failing tests after an edit, over the initial count."
    )
    failed_edit: float = Field(-0.05, le=0, description="str_replace that did not apply.")
    repeated_test: float = Field(-0.05, le=0, description="run_tests with no edit since the last.")
    parse_error: float = Field(-0.1, le=0, description="Turn without one valid tool call.")


class CandidatesParams(Section):
    """`env.actions: candidates`: the agent picks among locked candidate edits (docs/tasks.md)."""

    k: int = Field(
        8,
        ge=2,
        le=12,
        description="Candidate edits shown per episode: the fix and k-1 validated-wrong "
        "ones (12 are stored per task: tasks/candidates.py MAX_WRONG; fewer where a task has fewer).",
    )


class EnvParams(Section):
    """The tool-using repair environment (docs/design.md, "Environment")."""

    actions: Literal["free", "candidates"] = Field(
        "free",
        description="free: view/search/str_replace/run_tests/submit on the files; candidates: "
        "apply/revert/view/run_tests/submit over k numbered candidate edits (env/candidate_board.py).",
    )
    candidates: CandidatesParams = CandidatesParams()

    max_turns: int = Field(12, ge=2, description="Assistant turns before the episode is cut.")
    view_max_lines: int = Field(60, ge=5, description="Most lines one view call returns.")
    max_observation_chars: int = Field(
        3000, ge=200, description="Tool results longer than this are truncated."
    )
    search_max_hits: int = Field(20, ge=1, description="Most matching lines one search returns.")
    tool_cost: ToolCostParams = ToolCostParams()
    rewards: RewardParams = RewardParams()
