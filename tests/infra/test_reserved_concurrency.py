"""Every function has reserved concurrency: a burst of events cannot take the account's concurrency,
and each function's own cap states how many of its runs may overlap."""

from __future__ import annotations

from tests.infra.conftest import Synthesized


def test_every_function_reserves_its_concurrency(staging: Synthesized) -> None:
    functions = staging.template.find_resources("AWS::Lambda::Function")
    reserved = {
        props["Properties"]["FunctionName"]: props["Properties"].get("ReservedConcurrentExecutions")
        for props in functions.values()
        if "FunctionName" in props["Properties"]
    }
    assert reserved == {
        "lkfr-staging-zombie-reaper": 1,
        "lkfr-staging-agents-worker-drainer": 2,
        "lkfr-staging-agents-tts-reach-alarm": 2,
    }
