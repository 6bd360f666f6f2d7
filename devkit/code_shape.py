"""Print the shape of the runtime code: the largest modules and functions (lines) and the largest
McCabe complexity (ruff's C901), so a refactor's effect is a command, not an impression.

    python -m devkit.code_shape [--top 5]
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
RUNTIME_ROOTS = ("functions", "layers/shared/python")
COMPLEXITY = re.compile(r"`(?P<name>[^`]+)` is too complex \((?P<score>\d+) > 0\)")


def sizes(roots: tuple[str, ...]) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    modules: list[tuple[int, str]] = []
    functions: list[tuple[int, str]] = []
    for root in roots:
        for path in sorted((REPO_ROOT / root).rglob("*.py")):
            text = path.read_text()
            relative = path.relative_to(REPO_ROOT)
            modules.append((len(text.splitlines()), str(relative)))
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
                    functions.append((node.end_lineno - node.lineno + 1, f"{relative}:{node.name}"))
    return sorted(modules, reverse=True), sorted(functions, reverse=True)


def complexity(roots: tuple[str, ...]) -> list[tuple[int, str]]:
    ruff = Path(sys.executable).with_name("ruff")
    result = subprocess.run(
        [
            str(ruff),
            "check",
            "--select",
            "C901",
            "--config",
            "lint.mccabe.max-complexity=0",
            "--output-format",
            "concise",
            "--no-cache",
            *roots,
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    found = []
    for line in result.stdout.splitlines():
        match = COMPLEXITY.search(line)
        if match:
            found.append((int(match["score"]), f"{line.split(':', 1)[0]}:{match['name']}"))
    return sorted(found, reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=5)
    top = parser.parse_args().top
    modules, functions = sizes(RUNTIME_ROOTS)
    for title, rows in (
        ("largest runtime modules (lines)", modules),
        ("largest runtime functions (lines)", functions),
        ("largest McCabe complexity (ruff C901)", complexity(RUNTIME_ROOTS)),
    ):
        print(title)
        for value, name in rows[:top]:
            print(f"  {value:5d}  {name}")


if __name__ == "__main__":
    main()
