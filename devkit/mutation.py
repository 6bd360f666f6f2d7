"""The mutation check (``make mutation``): mutmut over the decision, executor and adapter modules,
against the tests that exercise them, then the kill rate (``devkit.mutation_report``).

mutmut names each mutant after its file's path, and our packages are imported by their own names
(``fleet_remediation`` from layers/shared/python, the functions from functions/), so the check runs
in a staging folder, build/mutation, where each package sits at the top level as Lambda sees it.

    PYTHONPATH= .venv/bin/python -m devkit.mutation [--max-children N] [--survivors] [--diffs] [NAME ...]

The staging folder is kept between runs and only changed files are copied into it, so mutmut's
cache (build/mutation/mutants) keeps every verdict whose function and tests did not change: a run
that is stopped goes on where it stopped, and ``--survivors`` re-tests only the survivors after
tests were added (new tests in the files below are mapped to the functions they reach; a test
whose body now reaches other functions keeps its old map: give it a new name). Changing
``TESTS`` or ``DESELECTED`` makes mutmut throw every verdict away and start again, as it should.
For each mutant mutmut runs only the tests that reach the mutated function (mapped in one traced
run of ``TESTS``), stopping at the first failure.

Writes mutmut's progress to build/mutation/mutmut-run.log, then prints each surviving mutant that
changes behaviour and the tally. ``mutmut show NAME`` (in build/mutation) prints a mutant's diff.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

from devkit.mutation_report import report, results

REPO = Path(__file__).resolve().parent.parent
STAGING = REPO / "build" / "mutation"
MUTMUT = Path(sys.executable).with_name("mutmut")

# What is mutated: the decisions, the executors and the adapters of the shared layer and of the
# three functions, the drainer included (its ladder, guardrails, executor, saga, capacity keeping,
# evidence, recovery and validation, and the ECS, ledger, capacity-debt and probe adapters).
MUTATED = (
    "fleet_remediation/domain/reaping.py",
    "fleet_remediation/domain/reap_executor.py",
    "fleet_remediation/domain/reap_outcomes.py",
    "fleet_remediation/core/routing.py",
    "fleet_remediation/core/kill_switch.py",
    "fleet_remediation/contract/budgets.py",
    "fleet_remediation/adapters/aws_clients.py",
    "fleet_remediation/adapters/livekit_rooms.py",
    "fleet_remediation/adapters/logs_insights.py",
    "fleet_remediation/adapters/idempotency.py",
    "zombie_reaper/service.py",
    "tts_reach_alarm/analysis.py",
    "tts_reach_alarm/hypergeometric.py",
    "tts_reach_alarm/service.py",
    "worker_drainer/ladder.py",
    "worker_drainer/guardrails.py",
    "worker_drainer/executor.py",
    "worker_drainer/saga.py",
    "worker_drainer/capacity.py",
    "worker_drainer/capacity_keeper.py",
    "worker_drainer/evidence.py",
    "worker_drainer/recovery.py",
    "worker_drainer/validation.py",
    "worker_drainer/adapters/ecs_tasks.py",
    "worker_drainer/adapters/ledger.py",
    "worker_drainer/adapters/capacity_debts.py",
    "worker_drainer/adapters/worker_probe.py",
)
# The tests that exercise them (the whole of tests/ would add minutes per mutant for little). mutmut
# maps each test to the functions it reaches and runs, per mutant, only the tests that reach it.
TESTS = (
    "tests/unit/test_reaper_service.py",
    "tests/unit/test_reaper_grace_and_journal.py",
    "tests/unit/test_reap_executor.py",
    "tests/unit/test_reaping_policy.py",
    "tests/unit/test_report_bounds.py",
    "tests/unit/test_tts_reach_analysis.py",
    "tests/unit/test_routing_and_budgets.py",
    "tests/unit/test_worker_drainer_attribution.py",
    "tests/unit/test_worker_drainer_capacity.py",
    "tests/unit/test_worker_drainer_insights.py",
    "tests/unit/test_worker_drainer_ladder.py",
    "tests/unit/test_worker_drainer_ladder_safety.py",
    "tests/unit/test_worker_drainer_reporting.py",
    "tests/unit/test_worker_drainer_stats.py",
    "tests/unit/test_worker_drainer_validation.py",
    "tests/integration/test_tts_reach_alarm.py",
    "tests/integration/test_livekit_rooms_deadlines.py",
    "tests/integration/test_kill_switch.py",
    "tests/integration/test_worker_drainer.py",
    "tests/integration/test_worker_drainer_safety.py",
    "tests/faults/test_reaper_livekit_faults.py",
    "tests/faults/test_drainer_saga_faults.py",
)
# A CPU-time test: mutmut's instrumentation slows every line, so it would fail for the wrong reason.
DESELECTED = (
    "tests/unit/test_tts_reach_analysis.py::test_five_thousand_jobs_take_well_under_a_second_of_cpu",
)
# Where each top-level package comes from.
PACKAGES = {
    "fleet_remediation": REPO / "layers/shared/python/fleet_remediation",
    "zombie_reaper": REPO / "functions/zombie_reaper",
    "tts_reach_alarm": REPO / "functions/tts_reach_alarm",
    "worker_drainer": REPO / "functions/worker_drainer",
    "livekit_fleet_agent": REPO / "agent" / "livekit_fleet_agent",
    "devkit": REPO / "devkit",
    "tests": REPO / "tests",
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
source_paths = ["fleet_remediation", "zombie_reaper", "tts_reach_alarm", "worker_drainer"]
only_mutate = {mutated}
also_copy = ["agent", "devkit", "tests"]
pytest_add_cli_args_test_selection = {tests}
pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x", {deselected}]
use_git_change_detection = false
"""


def stage() -> None:
    """Copy the packages into the staging folder, touching only the files that changed, so that
    mutmut's cache (build/mutation/mutants) keeps the verdicts of every function that did not."""
    STAGING.mkdir(parents=True, exist_ok=True)
    for name, source in PACKAGES.items():
        _sync(source, STAGING / name)
    quoted = "[" + ", ".join(f'"{item}"' for item in MUTATED) + "]"
    tests = "[" + ", ".join(f'"{item}"' for item in TESTS) + "]"
    deselected = ", ".join(f'"--deselect", "{test}"' for test in DESELECTED)
    _write_if_changed(
        STAGING / "pyproject.toml", PYPROJECT.format(mutated=quoted, tests=tests, deselected=deselected)
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


def run(names: list[str], max_children: int) -> None:
    log = STAGING / "mutmut-run.log"
    print(f"mutmut run (progress in {log.relative_to(REPO)}) ...", flush=True)
    with log.open("w") as output:
        run = subprocess.run(
            [str(MUTMUT), "run", "--max-children", str(max_children), *names],
            cwd=STAGING,
            env=_environment(),
            stdout=output,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if run.returncode != 0:
        print(log.read_text()[-3000:])
        raise SystemExit(f"mutmut run failed ({run.returncode}); see {log}")


def survivors() -> list[str]:
    return sorted(name for name, status in results(STAGING).items() if status == "survived")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-children", type=int, default=2, help="mutants tested at once")
    parser.add_argument("--report-only", action="store_true", help="print the last tally; run nothing")
    parser.add_argument(
        "--survivors", action="store_true", help="re-test the mutants that survived (after adding tests)"
    )
    parser.add_argument("--diffs", action="store_true", help="print each surviving mutant's change")
    parser.add_argument(
        "names",
        nargs="*",
        help="re-test only these mutants (mutmut names or globs, e.g. 'worker_drainer.saga.*'), "
        "even those with a verdict; the tally still covers every mutant",
    )
    args = parser.parse_args()
    if not args.report_only:
        stage()
        run([*args.names, *(survivors() if args.survivors else [])], args.max_children)
    report(STAGING, results(STAGING), show_diffs=args.diffs)


if __name__ == "__main__":
    main()
