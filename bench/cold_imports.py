"""Cold import time of each handler module, each in a fresh interpreter (what a Lambda cold start pays
for our code and its layers, before the first invocation).

    python -m bench.cold_imports [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

FUNCTIONS_DIR = Path(__file__).resolve().parent.parent / "functions"
PROBE = "import time; started = time.perf_counter(); import {module}; print(time.perf_counter() - started)"


def handler_modules() -> list[str]:
    return sorted(f"{path.parent.name}.handler" for path in FUNCTIONS_DIR.glob("*/handler.py"))


def measure(module: str, repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", PROBE.format(module=module)], capture_output=True, text=True, check=True
        )
        samples.append(float(out.stdout.strip().splitlines()[-1]))
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"cold import of each handler module ({args.repeat} fresh interpreters each)")
    print(f"{'module':<28} {'median ms':>10} {'min ms':>8} {'max ms':>8}")
    for module in handler_modules():
        samples = [s * 1000 for s in measure(module, args.repeat)]
        print(f"{module:<28} {statistics.median(samples):>10.0f} {min(samples):>8.0f} {max(samples):>8.0f}")


if __name__ == "__main__":
    main()
