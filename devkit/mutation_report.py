"""The verdicts of the mutation check (``make mutation``), read from mutmut's cache in each module's
staging folder, and the tally: per file, per module, then in all, with the kill rate over the
mutants checked and over those that change behaviour (a mutant that only rewrites the words of a
message, or one listed as equivalent in ``devkit.mutation_modules.EQUIVALENT`` with its reason, is
counted apart).

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
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from devkit.mutation_modules import EQUIVALENT

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


def mutant_file(name: str) -> str:
    """The module path a mutant's name starts with (mutmut: ``<module>.x<function>__mutmut_<n>``)."""
    return name.partition(".x")[0]


def mutant_diff(staging: Path, name: str) -> str:
    """The mutant's diff, as ``mutmut show NAME`` prints it."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    with in_staging(staging):
        return get_diff_for_mutant(name)


@contextlib.contextmanager
def in_staging(staging: Path) -> Iterator[None]:
    # mutmut reads its settings (pyproject.toml) and its cache (mutants/) from the working folder.
    # Its settings are cached per process: each module's folder has its own.
    from mutmut.configuration import reset_config

    previous = Path.cwd()
    os.chdir(staging)
    reset_config()
    try:
        yield
    finally:
        os.chdir(previous)
        reset_config()


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


def report(staged: Mapping[str, Path], show_diffs: bool = False) -> None:
    """Each surviving mutant that changes behaviour (with its diff when asked), each equivalent one
    with its reason, a table per file and per module, and the tally; its last line starts
    ``mutation: N mutants, K killed (R %)``."""
    verdicts: dict[str, str] = {}
    module_of: dict[str, str] = {}
    for module, folder in staged.items():
        if not (folder / "mutants").is_dir():
            print(f"  {module}: not run yet (make mutation MUTATION_ARGS='--module {module}')")
            continue
        for name, status in results(folder).items():
            verdicts[name], module_of[name] = status, module
    survivors = sorted(name for name, status in verdicts.items() if status == "survived")
    diffs = {name: mutant_diff(staged[module_of[name]], name) for name in survivors}
    apart = {name for name in survivors if is_message_text(diffs[name]) or name in EQUIVALENT}
    for name in survivors:
        if name in EQUIVALENT:
            print(f"  equivalent: {name}: {EQUIVALENT[name]}")
        elif name not in apart:
            print(f"  survived: {name}")
            if show_diffs:
                print(textwrap.indent(_changed_lines(diffs[name]), "      "))
    _table("file", verdicts, mutant_file)
    _table("module", verdicts, module_of.__getitem__, apart)
    print(_tally(verdicts, survivors, apart))


def _tally(verdicts: dict[str, str], survivors: list[str], apart: set[str]) -> str:
    counts = Counter(verdicts.values())
    unchecked = counts["not checked"]
    checked = sum(counts.values()) - unchecked
    caught = sum(counts[status] for status in CAUGHT)
    others = "".join(
        f", {n} {status}"
        for status, n in sorted(counts.items())
        if status not in (*CAUGHT, "survived", "no tests", "not checked")
    )
    equivalent = len(apart & EQUIVALENT.keys())
    behavioural = checked - len(apart)
    return (
        f"mutation: {checked} mutants, {caught} killed ({_percent(caught, checked)} %; {counts['timeout']} "
        f"of them by a timeout), {len(survivors)} survived ({len(apart) - equivalent} only rewrite message "
        f"text, {equivalent} equivalent), {counts['no tests']} not reached by a test{others}; over the "
        f"{behavioural} that change behaviour: {_percent(caught, behavioural)} % killed"
        + (f"; {unchecked} more not checked yet (run again to go on)" if unchecked else "")
    )


def _table(
    title: str, verdicts: dict[str, str], group: Callable[[str], str], apart: set[str] | None = None
) -> None:
    by_group: dict[str, Counter[str]] = {}
    set_apart: Counter[str] = Counter()
    for name, status in verdicts.items():
        by_group.setdefault(group(name), Counter())[status] += 1
        set_apart[group(name)] += name in (apart or ())
    columns = ("killed", "timeout", "survived", "no tests", "not checked")
    last = "  killed % (of behavioural)" if apart is not None else "  killed %"
    print(f"  {title:<44} {'mutants':>7} " + " ".join(f"{c:>11}" for c in columns) + last)
    for key, counts in sorted(by_group.items()):
        checked = sum(counts.values()) - counts["not checked"]
        caught = sum(counts[status] for status in CAUGHT)
        rate = f"  {_percent(caught, checked):>8}"
        if apart is not None:
            rate += f" ({_percent(caught, checked - set_apart[key])})"
        cells = " ".join(f"{counts[c]:>11}" for c in columns)
        print(f"  {key:<44} {sum(counts.values()):>7} {cells}{rate}")


def _changed_lines(diff: str) -> str:
    return "\n".join(
        line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )


def _percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}" if whole else "-"
