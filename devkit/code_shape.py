"""Print the shape of the runtime code: the largest modules and functions (lines) and the largest
McCabe complexity (ruff's C901), so a refactor's effect is a command, not an impression.

    python -m devkit.code_shape [--top 5] [--check] [--repo PATH]

``--check`` (part of ``make lint``) fails when a runtime module, function or complexity is over the
limits in pyproject.toml's ``[tool.code_shape]``, unless the place is listed there under ``pending``;
a ``pending`` entry that is no longer over fails too, so the list only shrinks.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
RUNTIME_ROOTS = ("functions", "layers/shared/python", "src", "agent")
COMPLEXITY = re.compile(r"`(?P<name>[^`]+)` is too complex \((?P<score>\d+) > 0\)")
SKIPPED_PARTS = frozenset({"cdk.out", "__pycache__"})


@dataclass(frozen=True)
class Limits:
    module_lines: int
    function_lines: int
    complexity: int
    pending: frozenset[str]

    @classmethod
    def from_pyproject(cls, repo: Path) -> Limits:
        config = tomllib.loads((repo / "pyproject.toml").read_text())
        shape = config["tool"]["code_shape"]
        return cls(
            module_lines=shape["max_module_lines"],
            function_lines=shape["max_function_lines"],
            complexity=config["tool"]["ruff"]["lint"]["mccabe"]["max-complexity"],
            pending=frozenset(shape.get("pending", ())),
        )


Measure = tuple[int, str]


def runtime_files(repo: Path, roots: tuple[str, ...]) -> list[Path]:
    return [
        path
        for root in roots
        for path in sorted((repo / root).rglob("*.py"))
        if not SKIPPED_PARTS.intersection(path.relative_to(repo).parts)
    ]


def sizes(repo: Path, roots: tuple[str, ...]) -> tuple[list[Measure], list[Measure]]:
    modules: list[Measure] = []
    functions: list[Measure] = []
    for path in runtime_files(repo, roots):
        text = path.read_text()
        relative = path.relative_to(repo)
        modules.append((len(text.splitlines()), str(relative)))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
                functions.append((node.end_lineno - node.lineno + 1, f"{relative}:{node.name}"))
    return sorted(modules, reverse=True), sorted(functions, reverse=True)


def complexity(repo: Path, roots: tuple[str, ...]) -> list[Measure]:
    """Every function's McCabe score, from ruff with the threshold at 0 (``--isolated``: no
    per-file ignores hide a score)."""
    ruff = Path(sys.executable).with_name("ruff")
    command = [str(ruff), "check", "--isolated", "--select", "C901", "--output-format", "concise"]
    command += ["--config", "lint.mccabe.max-complexity=0", "--no-cache", *roots]
    result = subprocess.run(command, cwd=repo, capture_output=True, text=True, check=False, timeout=60)
    found = []
    for line in result.stdout.splitlines():
        match = COMPLEXITY.search(line)
        if match:
            found.append((int(match["score"]), f"{line.split(':', 1)[0]}:{match['name']}"))
    return sorted(found, reverse=True)


def over_limits(repo: Path, roots: tuple[str, ...], limits: Limits) -> dict[str, list[Measure]]:
    modules, functions = sizes(repo, roots)
    return {
        f"modules over {limits.module_lines} lines": [m for m in modules if m[0] > limits.module_lines],
        f"functions over {limits.function_lines} lines": [
            f for f in functions if f[0] > limits.function_lines
        ],
        f"functions over complexity {limits.complexity} (ruff C901)": [
            c for c in complexity(repo, roots) if c[0] > limits.complexity
        ],
    }


def check(over: dict[str, list[Measure]], pending: frozenset[str]) -> list[str]:
    """The problems: places over a limit and not pending, and pending places no longer over."""
    places = {name for rows in over.values() for _, name in rows}
    problems = [
        f"{title}: {name} ({value})"
        for title, rows in over.items()
        for value, name in rows
        if name not in pending
    ]
    problems += [
        f"pending but no longer over any limit (remove it): {name}" for name in sorted(pending - places)
    ]
    return problems


def print_largest(repo: Path, top: int) -> None:
    modules, functions = sizes(repo, RUNTIME_ROOTS)
    for title, rows in (
        ("largest runtime modules (lines)", modules),
        ("largest runtime functions (lines)", functions),
        ("largest McCabe complexity (ruff C901)", complexity(repo, RUNTIME_ROOTS)),
    ):
        print(title)
        for value, name in rows[:top]:
            print(f"  {value:5d}  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=5, help="the N largest of each (0: none)")
    parser.add_argument("--check", action="store_true", help="fail on a place over the limits")
    parser.add_argument(
        "--repo", type=Path, default=REPO_ROOT, help="the tree to measure (limits: this checkout's)"
    )
    args = parser.parse_args()
    repo = args.repo.resolve()
    limits = Limits.from_pyproject(REPO_ROOT)
    if args.top > 0:
        print_largest(repo, args.top)
    over = over_limits(repo, RUNTIME_ROOTS, limits)
    for title, rows in over.items():
        listed = sum(name in limits.pending for _, name in rows)
        print(f"{title}: {len(rows)} ({listed} listed as pending in pyproject.toml)")
        for value, name in rows:
            print(f"  {value:5d}  {name}{'  (pending)' if name in limits.pending else ''}")
    problems = check(over, limits.pending)
    if args.check and problems:
        print("\n".join(["code shape check failed:", *(f"  {problem}" for problem in problems)]))
        sys.exit(1)


if __name__ == "__main__":
    main()
