"""Count the runtime functions that reach the run's report: those that take a ``ReportBuilder``
parameter and those that read ``run.report``, so "only ``record`` writes the report" is a figure,
not an impression.

    python -m devkit.report_writers [--list] [--repo PATH]

A function counts once, whichever of the two it does; a nested function counts on its own.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

from devkit.code_shape import REPO_ROOT, RUNTIME_ROOTS, runtime_files

REPORT_TYPE = "ReportBuilder"


def _takes_report(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    return any(a.annotation is not None and REPORT_TYPE in ast.unparse(a.annotation) for a in every)


def _own_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """The function's body, without the bodies of the functions defined inside it."""
    nodes: list[ast.AST] = []
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        nodes.append(node)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))
    return nodes


def _reads_run_report(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == "report"
        and isinstance(node.value, ast.Name)
        and node.value.id == "run"
        for node in _own_nodes(function)
    )


def report_writers(repo: Path) -> list[str]:
    """``path:line name`` of every runtime function that takes the report or reads ``run.report``."""
    found: list[tuple[str, int, str]] = []
    for path in runtime_files(repo, RUNTIME_ROOTS):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (
                _takes_report(node) or _reads_run_report(node)
            ):
                found.append((str(path.relative_to(repo)), node.lineno, node.name))
    return [f"{path}:{line} {name}" for path, line, name in sorted(found)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print each function, not only the count")
    parser.add_argument("--repo", type=Path, default=REPO_ROOT)
    args = parser.parse_args(argv)
    found = report_writers(args.repo)
    if args.list:
        print("\n".join(found))
    print(f"{len(found)} functions take a {REPORT_TYPE} or read run.report")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
