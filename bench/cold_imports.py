"""Cold import time of each handler module, each in a fresh interpreter (what a Lambda cold start pays
for our code and its layers, before the first invocation).

    python -m bench.cold_imports [--repeat 7] [--module zombie_reaper.handler ...]

Two environments per handler: tracing off (``POWERTOOLS_TRACE_DISABLED=true``, as in tests and in a
stack deployed without active tracing) and tracing on (``LAMBDA_TASK_ROOT`` set and tracing not
disabled, as in Lambda with the stack's active X-Ray tracing: Powertools Tracer loads the X-Ray
SDK). Also lists which of the heavy optional libraries each import loaded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

FUNCTIONS_DIR = Path(__file__).resolve().parent.parent / "functions"
PROBE = (
    "import sys, time, json; started = time.perf_counter(); import {module}; "
    "elapsed = time.perf_counter() - started; "
    "print(json.dumps([elapsed, sorted(m for m in {watched!r} if m in sys.modules)]))"
)
WATCHED = ("aws_xray_sdk", "livekit.api", "aiohttp", "boto3", "pydantic")
ENVIRONMENTS = {
    "tracing off": {"POWERTOOLS_TRACE_DISABLED": "true"},
    "tracing on": {"POWERTOOLS_TRACE_DISABLED": "false", "LAMBDA_TASK_ROOT": str(FUNCTIONS_DIR)},
}


def handler_modules() -> list[str]:
    return sorted(f"{path.parent.name}.handler" for path in FUNCTIONS_DIR.glob("*/handler.py"))


def measure(module: str, repeat: int, env: dict[str, str]) -> tuple[list[float], list[str]]:
    samples, loaded = [], []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", PROBE.format(module=module, watched=WATCHED)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, **env},
        )
        elapsed, loaded = json.loads(out.stdout.strip().splitlines()[-1])
        samples.append(elapsed)
    return samples, loaded


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--module",
        action="append",
        choices=handler_modules(),
        help="only these handlers (default: every one)",
    )
    args = parser.parse_args()
    print(f"cold import of each handler module ({args.repeat} fresh interpreters each)")
    print(f"{'module':<26} {'environment':<12} {'median ms':>10} {'min ms':>8} {'max ms':>8}  loaded")
    for module in args.module or handler_modules():
        for name, env in ENVIRONMENTS.items():
            seconds, loaded = measure(module, args.repeat, env)
            samples = [s * 1000 for s in seconds]
            print(
                f"{module:<26} {name:<12} {statistics.median(samples):>10.0f} {min(samples):>8.0f} "
                f"{max(samples):>8.0f}  {', '.join(loaded)}",
                flush=True,
            )


if __name__ == "__main__":
    main()
