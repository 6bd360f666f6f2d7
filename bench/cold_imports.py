"""Cold import of each handler module, each in a fresh interpreter: the CPU time (``time.process_time``
of the child, what Lambda's init bills and the goal of 500 ms per function is about) and the wall
time, on the deploy artifact by default: the staging stack synthesized offline, each function's
code asset and its layers merged as Lambda does (the dependency layer built for this machine,
``build/lambda-local/deps``, compiled as the deployed one is), on the local Lambda runtime's Python
(devkit.lambda_emulator). No bytecode is written (Lambda's task root and /opt are read-only): the
artifact ships each module's bytecode for the runtime's Python (``make layers``), and a module read
by any other Python is compiled on every cold start, as in Lambda.

    python -m bench.cold_imports [--repeat 5] [--module zombie_reaper.handler ...] [--assembly DIR]
                                 [--local-lambda DIR] [--checkout] [--json]

Runs are interleaved (every handler and environment once, then again) and each figure is the median
of ``--repeat`` (at least 5 for a figure you quote); the machine's load average is printed with them:
CPU time moves much less with load than wall time, but quote it idle when you can. Two environments
per handler: tracing off (``POWERTOOLS_TRACE_DISABLED=true``) and tracing on (``LAMBDA_TASK_ROOT``
set, as in Lambda with the stack's active X-Ray tracing: Powertools Tracer loads the X-Ray SDK).
``--assembly DIR`` reads an already synthesized staging cloud assembly (``LKFR_CONFIG=
examples/standalone/environments.json python cdk/app.py staging DIR``) instead of synthesizing one;
``--local-lambda DIR`` takes the runtime and the dependency layer from DIR instead of
build/lambda-local (``make lambda-runtime LOCAL_LAMBDA=DIR LAMBDA_LOCAL_PYTHON=python3.13`` builds one
on the runtime's Python, the one whose figures count); ``--checkout`` imports from this checkout
instead (fast: no synthesis; the smoke test's size).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from devkit.lambda_emulator import python_version

REPO_ROOT = Path(__file__).resolve().parent.parent
LOCAL_LAMBDA_DIR = REPO_ROOT / "build" / "lambda-local"
FUNCTIONS_DIR = REPO_ROOT / "functions"
PROBE = (
    "import sys, time, json; cpu = time.process_time(); wall = time.perf_counter(); import {module}; "
    "print(json.dumps([time.process_time() - cpu, time.perf_counter() - wall, "
    "sorted(m for m in {watched!r} if m in sys.modules)]))"
)
WATCHED = (
    "aws_xray_sdk",
    "livekit.api",
    "aiohttp",
    "boto3",
    "botocore.config",
    "pydantic",
)
GOAL_CPU_MS = 500


@dataclass(frozen=True)
class Target:
    """Where a handler is imported from: its interpreter, module path and task root."""

    python: str
    python_path: str
    task_root: str


def handler_modules() -> list[str]:
    return sorted(f"{path.parent.name}.handler" for path in FUNCTIONS_DIR.glob("*/handler.py"))


def environments(target: Target) -> dict[str, dict[str, str]]:
    return {
        "tracing off": {"POWERTOOLS_TRACE_DISABLED": "true"},
        "tracing on": {"POWERTOOLS_TRACE_DISABLED": "false", "LAMBDA_TASK_ROOT": target.task_root},
    }


def checkout_targets(modules: list[str]) -> dict[str, Target]:
    path = os.pathsep.join(str(REPO_ROOT / p) for p in ("agent", "functions", "layers/shared/python", "src"))
    return {m: Target(sys.executable, path, str(FUNCTIONS_DIR)) for m in modules}


@contextlib.contextmanager
def artifact_targets(
    modules: list[str], synthesized: Path | None, local_lambda: Path
) -> Iterator[dict[str, Target]]:
    """Each handler's function as deployed: its code asset first, then its layers merged in order."""
    from devkit.lambda_artifact import load_assembly, synthesize
    from devkit.lambda_emulator import FunctionLayout, extract_layers, runtime_python

    with tempfile.TemporaryDirectory(prefix="lkfr-cold-imports-") as workdir:
        if synthesized is not None:
            assembly = load_assembly(synthesized)
        else:
            assembly = synthesize("staging", Path(workdir) / "cdk.out")
        targets = {}
        for function in assembly.functions():
            module = f"{function.package}.handler"
            if module not in modules:
                continue
            layers = [
                local_lambda / "deps" if any((layer.path / "python").glob("*.dist-info")) else layer.path
                for layer in function.layers
            ]
            layout = FunctionLayout(
                function.code_dir,
                extract_layers(layers, Path(workdir) / "opt" / function.package),
                runtime_python(local_lambda),
            )
            targets[module] = Target(str(layout.python), layout.python_path(), str(function.code_dir))
        yield targets


def probe(module: str, target: Target, env: dict[str, str]) -> tuple[float, float, list[str]]:
    out = subprocess.run(
        [target.python, "-c", PROBE.format(module=module, watched=WATCHED)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": target.python_path, "PYTHONDONTWRITEBYTECODE": "1", **env},
    )
    cpu, wall, loaded = json.loads(out.stdout.strip().splitlines()[-1])
    return cpu, wall, loaded


def measure(targets: dict[str, Target], repeat: int) -> list[dict[str, object]]:
    """Every (handler, environment) ``repeat`` times, interleaved; medians in ms."""
    samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
    loaded: dict[tuple[str, str], list[str]] = {}
    for _ in range(repeat):
        for module, target in targets.items():
            for name, env in environments(target).items():
                cpu, wall, found = probe(module, target, env)
                samples.setdefault((module, name), []).append((cpu, wall))
                loaded[(module, name)] = found
    return [
        {
            "module": module,
            "environment": name,
            "cpu_ms": round(statistics.median(cpu for cpu, _ in runs) * 1000),
            "wall_ms": round(statistics.median(wall for _, wall in runs) * 1000),
            "max_cpu_ms": round(max(cpu for cpu, _ in runs) * 1000),
            "runs": len(runs),
            "loaded": loaded[(module, name)],
        }
        for (module, name), runs in samples.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--module", action="append", choices=handler_modules(), help="only these handlers")
    parser.add_argument("--assembly", type=Path, help="an already synthesized staging cloud assembly")
    parser.add_argument(
        "--local-lambda", type=Path, default=LOCAL_LAMBDA_DIR, help="the local runtime and dependency layer"
    )
    parser.add_argument("--checkout", action="store_true", help="this checkout, not the deploy artifact")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    modules = args.module or handler_modules()
    load = os.getloadavg()
    chosen = (
        contextlib.nullcontext(checkout_targets(modules))
        if args.checkout
        else artifact_targets(modules, args.assembly, args.local_lambda)
    )
    with chosen as targets:
        rows = measure(targets, args.repeat)
        python = python_version(Path(next(iter(targets.values())).python))
    where = f"{'this checkout' if args.checkout else 'the deploy artifact (staging)'} on CPython {python}"
    if args.json:
        print(json.dumps({"artifact": where, "load_average": load, "goal_cpu_ms": GOAL_CPU_MS, "rows": rows}))
        return
    print(f"cold import of each handler from {where}, median of {args.repeat} interleaved fresh interpreters")
    print(
        f"load average at the start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; goal: CPU <= {GOAL_CPU_MS} ms"
    )
    print(f"{'module':<26} {'environment':<12} {'CPU ms':>7} {'wall ms':>8} {'max CPU':>8}  loaded")
    for row in rows:
        print(
            f"{row['module']:<26} {row['environment']:<12} {row['cpu_ms']:>7} {row['wall_ms']:>8} "
            f"{row['max_cpu_ms']:>8}  {', '.join(row['loaded'])}"  # type: ignore[arg-type]
        )


if __name__ == "__main__":
    main()
