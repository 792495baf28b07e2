"""`pappo play`: one episode of one task with a scripted agent, its transcript, events and metrics as
JSON; the way to see what an episode is without a policy."""

from __future__ import annotations

import functools
from typing import Any

from pappo.config import Params
from pappo.env.agents import Agent, NoisyAgent, OracleAgent, SubmitAgent, play
from pappo.env.episode import RepairEnv
from pappo.io import PappoError
from pappo.sandbox.grading import grade_many
from pappo.sandbox.pool import SandboxPool, require_containment
from pappo.tasks.store import find_task

SCRIPTED = ("oracle", "noisy", "submit")  # the candidates mode has its own (env/candidate_agents.py)


def play_task(params: Params, instance_id: str, agent: str, seed: int) -> dict[str, Any]:
    """Play task `instance_id` with agent `agent` (SCRIPTED, or in `env.actions: candidates` one of
    env/candidate_agents.py's); `seed` seeds the noisy agent and the candidates' order."""
    in_candidates = params.env.actions == "candidates"
    if agent not in SCRIPTED and not in_candidates:
        raise PappoError(f"--agent {agent!r}: choose oracle, noisy or submit")
    store, task = find_task(params, instance_id)
    require_containment(params.sandbox)
    buggy, view = store.buggy(task), params.env.view_max_lines
    bot: Agent = (
        OracleAgent(task, buggy, view_max_lines=view)
        if agent == "oracle"
        else NoisyAgent(task, buggy, seed=seed, view_max_lines=view)
        if agent == "noisy"
        else SubmitAgent()
    )
    with SandboxPool(params.sandbox) as pool:
        env = RepairEnv(
            task,
            store.clean(task),
            buggy,
            params.env,
            functools.partial(grade_many, pool, hidden=store.hidden),
            candidates=store.candidates[task.instance_id] if in_candidates else None,
            seed=seed,
        )
        if in_candidates:
            from pappo.env.candidate_agents import make_candidate_agent

            env.reset()  # the agent is made from the episode's board
            bot = make_candidate_agent(agent, env, seed)
        metrics, transcript = play(env, bot)
    return {
        "instance_id": task.instance_id,
        "agent": agent,
        "seed": seed,
        "metrics": metrics.to_json(),
        "per_turn_rewards": env.per_turn_rewards,
        "terminal_reward": env.terminal_reward,
        "events": [vars(e) for e in env.events],
        "transcript": transcript,
        "final_grade": env.final_grade.to_json() if env.final_grade else None,
    }
