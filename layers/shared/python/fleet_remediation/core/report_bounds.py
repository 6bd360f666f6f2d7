"""How big a report may grow: every string, collection and the whole line are bounded, so a report
always fits one CloudWatch Logs event with room to spare; what does not fit goes to detail lines."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from fleet_remediation.core.report_model import Decision, Report

MAX_REPORT_BYTES = 200_000


MAX_STRING_CHARS = 8_192


MAX_COLLECTION_ITEMS = 100


SKIPPED_SAMPLE_SIZE = 20


# Reasons beyond this many distinct ones are counted together as OTHER_REASONS.
MAX_SKIP_REASONS = 30


SKIP_REASON_CHARS = 64


OTHER_REASONS = "other"


DETAIL_LINE_BYTES = 64_000


def skip_reason(reason: str) -> str:
    """What skipped candidates are counted by: the reason's leading word(s) up to the first colon
    ("under-age: ..." -> "under-age"), so free-form detail after it does not split the count."""
    return reason.split(":", 1)[0].strip()[:SKIP_REASON_CHARS]


def cut_text(value: str) -> str:
    """``value`` cut to ``MAX_STRING_CHARS``, saying how much was cut."""
    if len(value) <= MAX_STRING_CHARS:
        return value
    return f"{value[:MAX_STRING_CHARS]}...[{len(value) - MAX_STRING_CHARS} more characters]"


class Bounder:
    """Cuts strings and collections to the named limits and counts what it cut."""

    def __init__(self, counts: Counter[str]) -> None:
        self.counts = counts

    def text(self, value: str) -> str:
        if len(value) > MAX_STRING_CHARS:
            self.counts["strings"] += 1
        return cut_text(value)

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return self.mapping(value)
        if isinstance(value, (list, tuple)):
            if len(value) > MAX_COLLECTION_ITEMS:
                self.counts["collection_items"] += len(value) - MAX_COLLECTION_ITEMS
            return [self.value(item) for item in value[:MAX_COLLECTION_ITEMS]]
        return value

    def mapping(self, value: dict[str, Any]) -> dict[str, Any]:
        if len(value) > MAX_COLLECTION_ITEMS:
            self.counts["collection_items"] += len(value) - MAX_COLLECTION_ITEMS
        items = list(value.items())[:MAX_COLLECTION_ITEMS]
        return {self.text(str(key)): self.value(item) for key, item in items}


def detail_chunks(detail: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """What the report could not hold, in chunks of at most ``DETAIL_LINE_BYTES``."""
    chunk: list[dict[str, Any]] = []
    size = 0
    for item in detail:
        item_size = len(json.dumps(item, separators=(",", ":"), ensure_ascii=False, default=str).encode())
        if item_size > DETAIL_LINE_BYTES:
            item = {"resource": item.get("resource"), "omitted": f"a detail item of {item_size} bytes"}
            item_size = 200
        if chunk and size + item_size > DETAIL_LINE_BYTES:
            yield chunk
            chunk, size = [], 0
        chunk.append(item)
        size += item_size + 1
    if chunk:
        yield chunk


# Room for the ``truncated`` counts (a few keys and numbers) that the report gets after it is fitted.
TRUNCATED_COUNTS_BYTES = 256


def fit_report(
    report: Report, truncated: Counter[str], detail: list[dict[str, Any]], *, full_detail: bool
) -> None:
    """Bring the report under ``MAX_REPORT_BYTES``, each step only if the previous was not enough."""
    steps: tuple[Callable[[Report, Counter[str], list[dict[str, Any]]], None], ...] = (
        partial(_move_listed_skips, full_detail=full_detail),
        _move_facts,
        _keep_list_heads,
        _move_summary,
    )
    for step in steps:
        if report.serialized_bytes() <= MAX_REPORT_BYTES:
            return
        step(report, truncated, detail)


def _move_listed_skips(
    report: Report, truncated: Counter[str], detail: list[dict[str, Any]], *, full_detail: bool
) -> None:
    listed_skips = [c for c in report.candidates if c.decision is Decision.SKIP]
    if not listed_skips:
        return
    report.candidates = [c for c in report.candidates if c.decision is not Decision.SKIP]
    truncated["candidates"] += len(listed_skips)
    if full_detail:
        detail += [c.model_dump(mode="json") for c in listed_skips]


def _move_facts(report: Report, truncated: Counter[str], detail: list[dict[str, Any]]) -> None:
    with_facts = [c for c in report.candidates if c.facts]
    if not with_facts:
        return
    detail += [{"resource": c.resource, "facts": c.facts} for c in with_facts]
    truncated["candidate_facts"] += len(with_facts)
    report.candidates = [c.model_copy(update={"facts": {}}) for c in report.candidates]


def _keep_list_heads(report: Report, truncated: Counter[str], detail: list[dict[str, Any]]) -> None:
    """Extreme inputs only (e.g. thousands of actions with long names): keep the heads of the
    lists, actions first, and log the tails."""
    lists: dict[str, list[Any]] = {
        "actions": report.actions,
        "errors": report.errors,
        "candidates": report.candidates,
    }
    report.actions, report.errors, report.candidates = [], [], []
    # The counts of what was cut are written into the report after this: keep room for them.
    budget = MAX_REPORT_BYTES - report.serialized_bytes() - TRUNCATED_COUNTS_BYTES
    kept: dict[str, list[Any]] = {}
    for name, items in lists.items():
        kept[name], budget = _head(items, budget)
        dropped = items[len(kept[name]) :]
        if dropped:
            truncated[name] += len(dropped)
            detail += [{"list": name, **item.model_dump(mode="json")} for item in dropped]
    report.actions, report.errors, report.candidates = kept["actions"], kept["errors"], kept["candidates"]


def _head(items: list[Any], budget: int) -> tuple[list[Any], int]:
    """The longest head of ``items`` that fits ``budget`` bytes, and the budget left."""
    head: list[Any] = []
    for item in items:
        item_size = len(item.model_dump_json().encode()) + 1
        if item_size > budget:
            break
        head.append(item)
        budget -= item_size
    return head, budget


def _move_summary(report: Report, truncated: Counter[str], detail: list[dict[str, Any]]) -> None:
    detail.append({"summary": report.summary})
    report.summary = {"omitted": "too large for the report; see the detail lines"}
    truncated["summary"] += 1
