"""Cold start of the deploy artifact as Lambda runs it: each synthesized function under AWS's Lambda
Runtime Interface Emulator, started fresh ``--repeat`` times, with its first invocation.

    python -m bench.lambda_cold_start [--repeat 5] [--json] [--function zombie_reaper ...]

Per function it prints the init phase (``INIT REPORT`` of the emulator: the bootstrap starting and
the handler module imported, what Lambda bills as Init Duration) and the first invoke (a manual dry
run: settings read, clients wired, the run and its report), median and range over fresh starts.
Same layout, environment and stand-ins as ``make lambda-smoke`` (tests/lambda_smoke): the staging
stack synthesized offline, moto in server mode for AWS, the real local livekit-server, X-Ray active
as the template sets it. The load average is printed beside the figures: on a shared machine the
figures are upper bounds.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from devkit.aws_standins import AwsStandIns, loopback_aws
from devkit.lambda_artifact import EXAMPLE_CONFIG, synthesize
from devkit.lambda_emulator import emulated_from_template
from devkit.livekit_local import LocalLiveKit

ENV_NAME = "staging"
MANUAL_DRY_RUNS: dict[str, dict[str, Any]] = {
    "zombie_reaper": {"dry_run": True},
    "worker_drainer": {"dry_run": True, "action": "plan"},
    "tts_reach_alarm": {"dry_run": True},
}
LIVEKIT_FUNCTIONS = frozenset({"zombie_reaper", "worker_drainer"})
INVOKE_TIMEOUT_SECONDS = 60.0


def measure(repeat: int, progress: bool, only: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    cdk_env = json.loads(EXAMPLE_CONFIG.read_text())["environments"][ENV_NAME]
    rows: list[dict[str, Any]] = []
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lkfr-cold-")))
        if progress:
            print("synthesizing the staging stack ...", flush=True)
        assembly = synthesize(ENV_NAME, workdir / "cdk.out")
        functions = {function.package: function for function in assembly.functions()}
        livekit = stack.enter_context(LocalLiveKit(log_path=workdir / "livekit.log"))
        endpoint, xray_address = stack.enter_context(loopback_aws())
        standins = AwsStandIns(endpoint_url=endpoint, region=cdk_env["region"])
        standins.create_referenced(assembly, list(functions.values()))
        standins.create_parameters(assembly)
        drainer_env = functions["worker_drainer"].environment
        standins.create_secret(
            drainer_env["LIVEKIT_SECRET_ID"], {"api_key": livekit.api_key, "api_secret": livekit.api_secret}
        )
        standins.create_log_group(drainer_env["AGENT_LOG_GROUP"])
        standins.create_ecs_service(drainer_env["ECS_CLUSTER"], drainer_env["ECS_SERVICE"])
        for name, function in sorted(functions.items()):
            if only and name not in only:
                continue
            endpoints = {"LIVEKIT_URL": livekit.http_url} if name in LIVEKIT_FUNCTIONS else {}
            laid_out = emulated_from_template(
                function,
                standins.resolve(function, endpoints),
                workdir,
                name,
                region=cdk_env["region"],
                xray_daemon_address=xray_address,
                aws_endpoint_url=endpoint,
            )
            init_ms, first_invoke_s, statuses = [], [], set()
            for attempt in range(repeat):
                log = workdir / f"{name}-{attempt}.log"
                with dataclasses.replace(laid_out, log_path=log) as fn:
                    invocation = fn.invoke(MANUAL_DRY_RUNS[name], timeout=INVOKE_TIMEOUT_SECONDS)
                if invocation.init_ms is None:
                    raise SystemExit(f"{name}: no INIT REPORT from the emulator: {fn.log_tail()}")
                init_ms.append(invocation.init_ms)
                first_invoke_s.append(invocation.seconds)
                body = invocation.body
                statuses.add(str(body.get("status")) if isinstance(body, dict) else repr(body)[:80])
            row = {
                "function": name,
                "init_ms": {"median": statistics.median(init_ms), "min": min(init_ms), "max": max(init_ms)},
                "first_invoke_s": {
                    "median": statistics.median(first_invoke_s),
                    "min": min(first_invoke_s),
                    "max": max(first_invoke_s),
                },
                "statuses": sorted(statuses),
                "load_average": os.getloadavg()[0],
            }
            rows.append(row)
            if progress:
                print(_line(row), flush=True)
    return rows


def _line(row: dict[str, Any]) -> str:
    init, first = row["init_ms"], row["first_invoke_s"]
    return (
        f"{row['function']:<16} {init['median']:>9.0f} {init['min']:>7.0f} {init['max']:>7.0f}   "
        f"{first['median']:>9.2f} {first['min']:>6.2f} {first['max']:>6.2f}   "
        f"{','.join(row['statuses']):<8} {row['load_average']:>5.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=5, help="fresh starts per function")
    parser.add_argument("--json", action="store_true", help="one JSON object per function")
    parser.add_argument(
        "--function", action="append", choices=sorted(MANUAL_DRY_RUNS), help="only these (default: all)"
    )
    args = parser.parse_args()
    if not args.json:
        print(f"deploy artifact under the Lambda runtime emulator, {args.repeat} fresh starts each")
        print(
            f"{'function':<16} {'init ms':>9} {'min':>7} {'max':>7}   {'invoke s':>9} {'min':>6} "
            f"{'max':>6}   {'status':<8} {'load':>5}"
        )
    rows = measure(args.repeat, progress=not args.json, only=frozenset(args.function or ()))
    if args.json:
        for row in rows:
            print(json.dumps(row))


if __name__ == "__main__":
    main()
