"""How long a running function keeps acting after someone turns its kill switch off.

A worker thread plays an executor: before every step it asks ``SsmModeSwitch.read()`` (as the reaper
does before each deletion and the drainer before each step), a step every ``--step-ms``. The main
thread waits a random moment, turns the function's own switch off with PutParameter, and measures
until the worker first sees ``off``. SSM is moto in-process, so the figure is the cache's doing plus
the step interval; in AWS one GetParameters round trip (tens of ms) comes on top.

    python -m bench.kill_switch_lag [--runs 10] [--step-ms 50] [--max-age 5]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import threading
import time
from typing import Any

from moto import mock_aws

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.contract.budgets import KILL_SWITCH_READ
from fleet_remediation.contract.naming import FunctionName, function_mode_parameter_name, mode_parameter_name
from fleet_remediation.core.kill_switch import KILL_SWITCH_MAX_AGE_SECONDS, SsmModeSwitch
from fleet_remediation.core.report_model import Mode

ENVIRONMENT = mode_parameter_name("bench")
OWN = function_mode_parameter_name("bench", FunctionName.ZOMBIE_REAPER)


def one_run(ssm: Any, max_age: float, step_seconds: float, rng: random.Random) -> float:
    ssm.put_parameter(Name=OWN, Value="enforce", Type="String", Overwrite=True)
    switch = SsmModeSwitch(ENVIRONMENT, OWN, client=ssm, max_age_seconds=max_age)
    seen_off = threading.Event()
    seen_at: list[float] = []

    def executor() -> None:
        while not seen_off.is_set():
            if switch.read() is Mode.OFF:
                seen_at.append(time.monotonic())
                seen_off.set()
                return
            time.sleep(step_seconds)

    worker = threading.Thread(target=executor)
    worker.start()
    time.sleep(rng.uniform(0, max(max_age, step_seconds)))  # any phase of the cache
    ssm.put_parameter(Name=OWN, Value="off", Type="String", Overwrite=True)
    flipped_at = time.monotonic()
    if not seen_off.wait(max_age + 10):
        raise RuntimeError("the executor never saw the switch turn off")
    worker.join()
    return seen_at[0] - flipped_at


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--step-ms", type=float, default=50.0)
    parser.add_argument(
        "--max-age",
        type=float,
        default=KILL_SWITCH_MAX_AGE_SECONDS,
        help="the cached switch's max age in seconds (default: the deployed one)",
    )
    args = parser.parse_args()
    rng = random.Random(7)
    print(
        f"kill switch lag: off written -> first step that sees it ({args.runs} runs, "
        f"a step every {args.step_ms:g} ms)"
    )
    print(f"{'cache max age':<16} {'min s':>7} {'median s':>9} {'max s':>7}")
    os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")
    with mock_aws():
        ssm = aws_client(KILL_SWITCH_READ)
        ssm.put_parameter(Name=ENVIRONMENT, Value="enforce", Type="String")
        ssm.put_parameter(Name=OWN, Value="enforce", Type="String")
        for max_age in (args.max_age, 0.0):
            lags = [one_run(ssm, max_age, args.step_ms / 1000, rng) for _ in range(args.runs)]
            kind = (
                "uncached"
                if max_age == 0
                else "deployed"
                if max_age == KILL_SWITCH_MAX_AGE_SECONDS
                else "cached"
            )
            label = f"{max_age:g} s ({kind})"
            print(f"{label:<16} {min(lags):>7.2f} {statistics.median(lags):>9.2f} {max(lags):>7.2f}")


if __name__ == "__main__":
    main()
