"""The mutation check (``make mutation``): mutmut over the decision, executor and adapter modules,
against the tests that exercise them, then the kill rate.

mutmut names each mutant after its file's path, and our packages are imported by their own names
(``fleet_remediation`` from layers/shared/python, the functions from functions/), so the check runs
in a staging folder, build/mutation, where each package sits at the top level as Lambda sees it.

    PYTHONPATH= .venv/bin/python -m devkit.mutation [--max-children N]

Writes mutmut's progress to build/mutation/mutmut-run.log, then prints each surviving mutant that
changes behaviour and the tally: killed, timed out, survived (and how many of those only rewrite the
words of a message), not reached by any test, and the kill rate over all mutants and over those that
change behaviour. ``mutmut show NAME`` (in build/mutation) prints a mutant's diff.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import textwrap
import tokenize
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STAGING = REPO / "build" / "mutation"
MUTMUT = Path(sys.executable).with_name("mutmut")

# What is mutated: the decisions, the executors and the adapters of the shared layer and the
# reaper and responder (the drainer has its own owner and suite).
MUTATED = (
    "fleet_remediation/domain/reaping.py",
    "fleet_remediation/domain/reap_executor.py",
    "fleet_remediation/core/routing.py",
    "fleet_remediation/contract/budgets.py",
    "fleet_remediation/adapters/aws_clients.py",
    "fleet_remediation/adapters/livekit_rooms.py",
    "fleet_remediation/adapters/logs_insights.py",
    "zombie_reaper/service.py",
    "tts_reach_alarm/analysis.py",
    "tts_reach_alarm/hypergeometric.py",
    "tts_reach_alarm/service.py",
)
# The tests that exercise them (the whole of tests/ would add minutes per mutant for little).
TESTS = (
    "tests/unit/test_reaper_service.py",
    "tests/unit/test_reaper_grace_and_journal.py",
    "tests/unit/test_reap_executor.py",
    "tests/unit/test_reaping_policy.py",
    "tests/unit/test_report_bounds.py",
    "tests/unit/test_tts_reach_analysis.py",
    "tests/unit/test_routing_and_budgets.py",
    "tests/integration/test_tts_reach_alarm.py",
    "tests/integration/test_livekit_rooms_deadlines.py",
    "tests/faults/test_reaper_livekit_faults.py",
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
    "devkit": REPO / "devkit",
    "tests": REPO / "tests",
}

PYPROJECT = """\
[tool.pytest.ini_options]
pythonpath = ["."]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
timeout = 120
markers = ["livekit: needs the real livekit-server binary"]
filterwarnings = [
    "ignore::jwt.warnings.InsecureKeyLengthWarning",
    "ignore::DeprecationWarning:typeguard.*",
]

[tool.mutmut]
source_paths = ["fleet_remediation", "zombie_reaper", "tts_reach_alarm"]
only_mutate = {mutated}
also_copy = ["worker_drainer", "devkit", "tests"]
pytest_add_cli_args_test_selection = {tests}
pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x", {deselected}]
"""


def stage() -> None:
    if STAGING.exists():
        shutil.rmtree(STAGING)
    STAGING.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name, source in PACKAGES.items():
        shutil.copytree(source, STAGING / name, ignore=ignore)
    quoted = "[" + ", ".join(f'"{item}"' for item in MUTATED) + "]"
    tests = "[" + ", ".join(f'"{item}"' for item in TESTS) + "]"
    deselected = ", ".join(f'"--deselect", "{test}"' for test in DESELECTED)
    (STAGING / "pyproject.toml").write_text(
        PYPROJECT.format(mutated=quoted, tests=tests, deselected=deselected)
    )


def results() -> dict[str, str]:
    """mutmut's verdict per mutant (``mutmut results --all true`` prints ``name: status``)."""
    output = _mutmut("results", "--all", "true")
    verdicts = {}
    for line in output.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep:
            verdicts[name] = status
    return verdicts


def is_message_text(name: str) -> bool:
    """Whether a mutant only rewrites the words of a human-readable string (a reason, a message, a
    log line: a literal with a space in it) and no code, key or identifier."""
    diff = _mutmut("show", name)
    removed = [line[1:] for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    before, after = _tokens("\n".join(removed)), _tokens("\n".join(added))
    if before is None or after is None or len(before) != len(after):
        return False
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    return bool(changed) and all(
        kind == tokenize.STRING and other_kind == tokenize.STRING and " " in text
        for (kind, text), (other_kind, _) in changed
    )


def _tokens(source: str) -> list[tuple[int, str]] | None:
    try:
        tokens = tokenize.generate_tokens(io.StringIO(textwrap.dedent(source)).readline)
        return [
            (t.type, t.string)
            for t in tokens
            if t.type
            not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT)
        ]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None


def _mutmut(*args: str) -> str:
    return subprocess.run(
        [str(MUTMUT), *args], cwd=STAGING, env=_environment(), capture_output=True, text=True, check=True
    ).stdout


def _environment() -> dict[str, str]:
    environment = dict(os.environ)
    # The staged packages, never the working tree's, must be the ones imported.
    environment.pop("PYTHONPATH", None)
    environment.setdefault("LIVEKIT_SERVER_BIN", str(REPO / ".tools" / "bin" / "livekit-server"))
    return environment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-children", type=int, default=2, help="mutants tested at once")
    args = parser.parse_args()
    stage()
    log = STAGING / "mutmut-run.log"
    print(f"mutmut run (progress in {log.relative_to(REPO)}) ...", flush=True)
    with log.open("w") as output:
        run = subprocess.run(
            [str(MUTMUT), "run", "--max-children", str(args.max_children)],
            cwd=STAGING,
            env=_environment(),
            stdout=output,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if run.returncode != 0:
        print(log.read_text()[-3000:])
        raise SystemExit(f"mutmut run failed ({run.returncode}); see {log}")
    verdicts = results()
    counts = Counter(verdicts.values())
    survivors = sorted(name for name, status in verdicts.items() if status == "survived")
    text = [name for name in survivors if is_message_text(name)]
    behaviour = [name for name in survivors if name not in text]
    for name in behaviour:
        print(f"  survived: {name}")
    total, killed, timed_out = sum(counts.values()), counts["killed"], counts["timeout"]
    untested = counts["no tests"]
    caught = killed + timed_out
    others = ", ".join(
        f"{n} {s}"
        for s, n in sorted(counts.items())
        if s not in ("killed", "survived", "timeout", "no tests")
    )
    print(
        f"mutation: {total} mutants: {killed} killed, {timed_out} timed out, {len(survivors)} survived "
        f"({len(text)} of them only rewrite message text), {untested} not reached by a test"
        + (f", {others}" if others else "")
    )
    print(f"mutation: kill rate {100.0 * caught / total:.1f}% of all mutants")
    behavioural = total - len(text)
    print(f"mutation: kill rate {100.0 * caught / behavioural:.1f}% of mutants that change behaviour")


if __name__ == "__main__":
    main()
