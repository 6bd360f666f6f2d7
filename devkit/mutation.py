"""The mutation check (``make mutation``): mutmut over every runtime module, module by module,
against the tests that cover each, then the kill rate per module (``devkit.mutation_report``).

The modules and their tests are listed in ``devkit.mutation_modules``. mutmut names each mutant
after its file's path, and our packages are imported by their own names (``fleet_remediation`` from
layers/shared/python, the functions from functions/, ``livekit_fleet_remediation`` from cdk/), so
each module runs in a staging folder of its own, build/mutation/<module>, where each package sits
at the top level as Lambda sees it.

    PYTHONPATH= .venv/bin/python -m devkit.mutation [--module NAME ...|--shard I/N] [--list]
        [--jobs N] [--survivors] [--sample PERCENT [--seed N]] [--diffs] [--report-only] [MUTANT ...]

A staging folder is kept between runs and only changed files are copied into it, so mutmut's cache
(build/mutation/<module>/mutants) keeps every verdict whose function and tests did not change: a
run that is stopped goes on where it stopped, and ``--survivors`` re-tests only the survivors after
tests were added (new tests in a module's files are mapped to the functions they reach; a test whose
body now reaches other functions keeps its old map: give it a new name). Changing a module's tests
or deselections makes mutmut throw that module's verdicts away and start again, as it should. For
each mutant mutmut runs only the module's tests that reach the mutated function (mapped in one
traced run of the module's tests), stopping at the first failure.

Writes mutmut's progress to build/mutation/<module>/mutmut-run.log, then prints each surviving
mutant that changes behaviour, a table per file and per module, and the tally. ``mutmut show NAME``
(in build/mutation/<module>) prints a mutant's diff.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

from devkit.mutation_modules import MODULES, Module, by_name, shard
from devkit.mutation_report import mutant_file, report, results

REPO = Path(__file__).resolve().parent.parent
STAGING_ROOT = REPO / "build" / "mutation"
MUTMUT = Path(sys.executable).with_name("mutmut")

# Where each top-level package comes from.
PACKAGES = {
    "fleet_remediation": REPO / "layers/shared/python/fleet_remediation",
    "zombie_reaper": REPO / "functions/zombie_reaper",
    "tts_reach_alarm": REPO / "functions/tts_reach_alarm",
    "worker_drainer": REPO / "functions/worker_drainer",
    "scheduled_drill": REPO / "functions/scheduled_drill",
    "livekit_fleet_remediation": REPO / "src" / "livekit_fleet_remediation",
    "livekit_fleet_agent": REPO / "agent" / "livekit_fleet_agent",
    "devkit": REPO / "devkit",
    "tests": REPO / "tests",
    # Read by tests that render the messages (tests/message_samples.py).
    "tools": REPO / "tools",
    # Read by tests that check the runbooks against the code.
    "docs": REPO / "docs",
}

# pytest's per-test limit is 30 s here (the slowest test takes 6 s): a mutant that turns a deadline
# into a hang is then a failed test, not two minutes of waiting. mutmut's own limit per mutant stays
# its default (15 x the tests' time, in CPU and in wall-clock time). Change detection hashes the
# staged files: the staging folder sits in the git work tree, whose other changes do not concern it.
PYPROJECT = """\
[tool.pytest.ini_options]
pythonpath = ["."]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
timeout = 30
markers = ["livekit: needs the real livekit-server binary"]
filterwarnings = [
    "ignore::jwt.warnings.InsecureKeyLengthWarning",
    "ignore::DeprecationWarning:typeguard.*",
]

[tool.mutmut]
source_paths = [
    "fleet_remediation", "zombie_reaper", "tts_reach_alarm", "worker_drainer", "scheduled_drill",
    "livekit_fleet_remediation"
]
only_mutate = {mutated}
also_copy = ["livekit_fleet_agent", "devkit", "tests", "tools", "docs"{reads}]
pytest_add_cli_args_test_selection = {tests}
pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x"{plugins}, {deselected}]
use_git_change_detection = false
{isolation}
"""


def staging(module: Module) -> Path:
    return STAGING_ROOT / module.name


def stage(module: Module) -> None:
    """Copy the packages into the module's staging folder, touching only the files that changed, so
    that mutmut's cache (build/mutation/<module>/mutants) keeps the verdicts of every function that
    did not."""
    folder = staging(module)
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in PACKAGES.items():
        _sync(source, folder / name)
    for read in module.reads:
        if (REPO / read).is_dir():
            _sync(REPO / read, folder / read)
        elif not (folder / read).exists() or not filecmp.cmp(REPO / read, folder / read, shallow=False):
            shutil.copy(REPO / read, folder / read)
    for path in module.mutated:
        mutant = folder / "mutants" / path
        if mutant.exists() and "__mutmut_" not in mutant.read_text():
            # Copied unmutated before the file was listed here: mutmut would take it as done.
            mutant.unlink()
    _write_if_changed(folder / "pyproject.toml", pyproject(module))


def pyproject(module: Module) -> str:
    """The staging folder's pytest and mutmut settings for ``module``."""
    quoted = "[" + ", ".join(f'"{item}"' for item in module.mutated) + "]"
    tests = "[" + ", ".join(f'"{item}"' for item in module.tests) + "]"
    deselected = ", ".join(f'"--deselect", "{test}"' for test in module.deselected)
    reads = "".join(f', "{read}"' for read in module.reads)
    plugins = ', "-p", "devkit.mutation_fixture_hits"' if module.shared_fixtures else ""
    # The fork server imports nothing before it forks (no collection): a test module that imports
    # the CDK would start the jsii kernel there, and every mutant would share it.
    isolation = (
        'process_isolation = "forkserver"\nforkserver_warmup = "none"'
        if module.fork_server
        else 'process_isolation = "fork"'
    )
    return PYPROJECT.format(
        mutated=quoted, tests=tests, deselected=deselected, reads=reads, plugins=plugins, isolation=isolation
    )


def _sync(source: Path, target: Path) -> None:
    wanted = {
        path.relative_to(source)
        for path in source.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    if target.exists():
        for path in target.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.relative_to(target) not in wanted:
                path.unlink()
    for relative in wanted:
        staged = target / relative
        if not staged.exists() or not filecmp.cmp(source / relative, staged, shallow=False):
            staged.parent.mkdir(parents=True, exist_ok=True)
            # A plain copy: the staged file's time is now, newer than its old mutants, so mutmut
            # regenerates them even when the source's own time is older (a checkout of an old file).
            shutil.copy(source / relative, staged)


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _environment() -> dict[str, str]:
    environment = dict(os.environ)
    # The staged packages, never the working tree's, must be the ones imported.
    environment.pop("PYTHONPATH", None)
    environment.setdefault("LIVEKIT_SERVER_BIN", str(REPO / ".tools" / "bin" / "livekit-server"))
    return environment


def run(module: Module, names: list[str], max_children: int) -> None:
    folder = staging(module)
    log = folder / "mutmut-run.log"
    print(f"{module.name}: mutmut run (progress in {log.relative_to(REPO)}) ...", flush=True)
    with log.open("w") as output:
        run = subprocess.run(
            [str(MUTMUT), "run", "--max-children", str(max_children), *names],
            cwd=folder,
            env=_environment(),
            stdout=output,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if run.returncode != 0:
        print(log.read_text()[-3000:])
        raise SystemExit(f"{module.name}: mutmut run failed ({run.returncode}); see {log}")


def survivors(module: Module) -> list[str]:
    """The survivors and the mutants no test reached: mutmut keeps a "no tests" verdict even after a
    new test reaches the function, so both are tested again."""
    return sorted(
        name for name, status in results(staging(module)).items() if status in ("survived", "no tests")
    )


def sample(module: Module, percent: float, seed: int) -> list[str]:
    """A seeded random ``percent`` of each file's mutants (at least three a file), for a module whose
    every mutant would take hours (the construct: a synthesis per test); the tally is then over the
    mutants checked. The names are mutmut's, so the module must have generated its mutants once."""
    names = results(staging(module))
    if not names:
        log = (staging(module) / "mutmut-run.log").relative_to(REPO)
        raise SystemExit(
            f"{module.name}: no mutants to sample yet: run the module once naming a mutant that matches "
            f"none (mutmut generates them all, then stops), or stop a run when {log} says 'Running "
            "stats'; then sample"
        )
    by_file: dict[str, list[str]] = {}
    for name in sorted(names):
        by_file.setdefault(mutant_file(name), []).append(name)
    chooser = random.Random(seed)
    chosen = [
        chooser.sample(file_names, min(len(file_names), max(3, round(len(file_names) * percent / 100))))
        for _, file_names in sorted(by_file.items())
    ]
    return sorted(name for names_of_file in chosen for name in names_of_file)


def _selected(args: argparse.Namespace) -> tuple[Module, ...]:
    if args.module:
        return tuple(by_name(name) for name in args.module)
    if args.shard:
        return shard(args.shard)
    return MODULES


def _own(module: Module, names: list[str]) -> list[str]:
    """The named mutants (names or globs) that belong to this module's files."""
    prefixes = tuple(path.removesuffix(".py").replace("/", ".") + "." for path in module.mutated)
    return [name for name in names if name.startswith(prefixes)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--jobs", "--max-children", dest="max_children", type=int, default=2, help="mutants tested at once"
    )
    parser.add_argument(
        "--module", action="append", help="run (or report) only this module; repeatable; --list names them"
    )
    parser.add_argument("--shard", help="I/N: run (or report) only the I-th of N shards of the modules")
    parser.add_argument("--list", action="store_true", help="list the modules, their files and tests")
    parser.add_argument("--report-only", action="store_true", help="print the last tally; run nothing")
    parser.add_argument(
        "--survivors",
        action="store_true",
        help="re-test the mutants that survived or that no test reached (after adding tests)",
    )
    parser.add_argument(
        "--sample",
        type=float,
        metavar="PERCENT",
        help="test only a seeded random PERCENT of each file's mutants (at least 3), for a slow module",
    )
    parser.add_argument("--seed", type=int, default=31, help="the sample's seed (default 31)")
    parser.add_argument("--diffs", action="store_true", help="print each surviving mutant's change")
    parser.add_argument(
        "names",
        nargs="*",
        help="re-test only these mutants (mutmut names or globs, e.g. 'worker_drainer.act.cordon_saga.*'), "
        "even those with a verdict; the tally still covers every mutant",
    )
    args = parser.parse_args()
    selected = _selected(args)
    if args.list:
        for module in selected:
            print(f"{module.name}: {module.what}\n  mutated: {', '.join(module.mutated)}")
            print(f"  tests: {', '.join(module.tests)}")
        return
    if not args.report_only:
        for module in selected:
            named = _own(module, args.names)
            if args.names and not named:
                continue
            stage(module)
            sampled = sample(module, args.sample, args.seed) if args.sample else []
            chosen = [*named, *sampled, *(survivors(module) if args.survivors else [])]
            run(module, chosen, args.max_children)
    report({module.name: staging(module) for module in selected}, show_diffs=args.diffs)


if __name__ == "__main__":
    main()
