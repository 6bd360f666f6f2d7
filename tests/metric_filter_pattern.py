"""A small, independent evaluator of the CloudWatch Logs JSON metric-filter pattern subset our
signals emit, written from the AWS filter-pattern syntax documentation, so tests can check the
pattern text itself rather than a copy of the signal's own matching logic.

Supported: ``{ <clause> && <clause> ... }`` where a clause is ``$.key = "text"`` (``*`` is a
wildcard matching any run of characters, case-sensitive) or ``$.key >= number`` (the field must be
a JSON number).
"""

from __future__ import annotations

import json
import re
from typing import Any

_STRING_CLAUSE = re.compile(r'^\$\.(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*"(?P<value>[^"]*)"$')
_NUMBER_CLAUSE = re.compile(r"^\$\.(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*>=\s*(?P<value>-?\d+(\.\d+)?)$")


def _string_matches(actual: Any, expected: str) -> bool:
    if not isinstance(actual, str):
        return False
    regex = ".*".join(re.escape(part) for part in expected.split("*"))
    return re.fullmatch(regex, actual, flags=re.DOTALL) is not None


def pattern_matches(pattern: str, message: str) -> bool:
    body = pattern.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise ValueError(f"not a JSON pattern: {pattern}")
    try:
        record = json.loads(message)
    except ValueError:
        return False
    if not isinstance(record, dict):
        return False
    for clause in (part.strip() for part in body[1:-1].split("&&")):
        if match := _STRING_CLAUSE.match(clause):
            if not _string_matches(record.get(match["key"]), match["value"]):
                return False
        elif match := _NUMBER_CLAUSE.match(clause):
            actual = record.get(match["key"])
            if isinstance(actual, bool) or not isinstance(actual, int | float):
                return False
            if actual < float(match["value"]):
                return False
        else:
            raise ValueError(f"clause outside the supported subset: {clause!r}")
    return True


def insights_filter_matches(command: str, record: dict[str, Any]) -> bool:
    """Evaluate ``filter <field> like "text"`` / ``filter <field> = "text"`` (Logs Insights: ``like``
    with a string is a case-sensitive substring match; ``=`` is equality)."""
    match = re.fullmatch(
        r'filter (?P<field>[A-Za-z_][A-Za-z0-9_]*) (?P<op>like|=) "(?P<text>[^"]*)"', command
    )
    if match is None:
        raise ValueError(f"filter outside the supported subset: {command!r}")
    actual = record.get(match["field"])
    if not isinstance(actual, str):
        return False
    return match["text"] in actual if match["op"] == "like" else actual == match["text"]
