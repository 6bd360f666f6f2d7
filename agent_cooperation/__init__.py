"""Agent-side cooperation with the worker drainer (DESIGN.md §3, incident report P2).

A LiveKit agents worker adopts it as its ``load_fnc``::

    from agent_cooperation import DrainAwareLoad

    load = DrainAwareLoad(max_jobs=2)
    server = AgentServer(load_fnc=load, load_threshold=0.99)

It reports full load while the worker's own ECS task carries the drainer's ``draining`` tag, and
folds measured pressure (slow VAD inference, CPU) into the job-count load, so a worker that cannot
keep up stops taking new jobs while its running sessions continue.
"""

from agent_cooperation.load import (
    DRAINING_STATE,
    STATE_TAG,
    DrainAwareLoad,
    SlowInferenceCounter,
    TaskTagReader,
)

__all__ = ["DRAINING_STATE", "STATE_TAG", "DrainAwareLoad", "SlowInferenceCounter", "TaskTagReader"]
