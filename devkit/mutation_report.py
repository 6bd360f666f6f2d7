"""The verdicts of the mutation check (``make mutation``), read from mutmut's cache in the staging
folder, and the tally: per module, then in all, with the kill rate over the mutants checked and over
those that change behaviour (a mutant that only rewrites the words of a message is counted apart).

mutmut is read in-process (one ``mutmut`` command costs seconds, and there are hundreds of
survivors); its settings and cache are read from the staging folder, its working folder.
"""

from __future__ import annotations

import contextlib
import io
import os
import textwrap
import tokenize
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

CAUGHT = ("killed", "timeout")


def results(staging: Path) -> dict[str, str]:
    """mutmut's verdict per mutant, read from its cache in the staging folder (what ``mutmut
    results --all true`` prints; in-process, as one ``mutmut`` command costs seconds)."""
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.stats import status_by_exit_code
    from mutmut.utils.file_utils import walk_mutatable_files

    verdicts = {}
    with in_staging(staging):
        for path in walk_mutatable_files():
            data = SourceFileMutationData(path=path)
            data.load()
            for name, exit_code in data.exit_code_by_key.items():
                verdicts[name] = status_by_exit_code[exit_code]
    return verdicts


def mutant_diff(staging: Path, name: str) -> str:
    """The mutant's diff, as ``mutmut show NAME`` prints it."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    with in_staging(staging):
        return get_diff_for_mutant(name)


@contextlib.contextmanager
def in_staging(staging: Path) -> Iterator[None]:
    # mutmut reads its settings (pyproject.toml) and its cache (mutants/) from the working folder.
    previous = Path.cwd()
    os.chdir(staging)
    try:
        yield
    finally:
        os.chdir(previous)


def is_message_text(diff: str) -> bool:
    """Whether a mutant's diff only rewrites the words of a human-readable string (a reason, a
    message, a log line: a literal with a space in it) and no code, key or identifier."""
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


def report(staging: Path, verdicts: dict[str, str], show_diffs: bool = False) -> None:
    """Each surviving mutant that changes behaviour (with its diff when asked), a table per module,
    and the tally; its last line starts ``mutation: N mutants, K killed (R %)``."""
    survivors = sorted(name for name, status in verdicts.items() if status == "survived")
    diffs = {name: mutant_diff(staging, name) for name in survivors}
    text = {name for name in survivors if is_message_text(diffs[name])}
    for name in survivors:
        if name not in text:
            print(f"  survived: {name}")
            if show_diffs:
                print(textwrap.indent(_changed_lines(diffs[name]), "      "))
    _table(verdicts)
    counts = Counter(verdicts.values())
    unchecked = counts["not checked"]
    checked = sum(counts.values()) - unchecked
    caught = sum(counts[status] for status in CAUGHT)
    others = "".join(
        f", {n} {status}"
        for status, n in sorted(counts.items())
        if status not in (*CAUGHT, "survived", "no tests", "not checked")
    )
    behavioural = checked - len(text)
    print(
        f"mutation: {checked} mutants, {caught} killed ({_percent(caught, checked)} %; {counts['timeout']} "
        f"of them by a timeout), {len(survivors)} survived ({len(text)} only rewrite message text), "
        f"{counts['no tests']} not reached by a test{others}; over the {behavioural} that change "
        f"behaviour: {_percent(caught, behavioural)} % killed"
        + (f"; {unchecked} more not checked yet (run again to go on)" if unchecked else "")
    )


def _table(verdicts: dict[str, str]) -> None:
    by_module: dict[str, Counter[str]] = {}
    for name, status in verdicts.items():
        by_module.setdefault(name.partition(".x")[0], Counter())[status] += 1
    columns = ("killed", "timeout", "survived", "no tests", "not checked")
    print(f"  {'module':<44} {'mutants':>7} " + " ".join(f"{c:>11}" for c in columns) + "  killed %")
    for module, counts in sorted(by_module.items()):
        checked = sum(counts.values()) - counts["not checked"]
        caught = sum(counts[status] for status in CAUGHT)
        print(
            f"  {module:<44} {sum(counts.values()):>7} "
            + " ".join(f"{counts[c]:>11}" for c in columns)
            + f"  {_percent(caught, checked):>8}"
        )


def _changed_lines(diff: str) -> str:
    return "\n".join(
        line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )


def _percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}" if whole else "-"
