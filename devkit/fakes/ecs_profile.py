"""ECS as the service profile describes it, in front of moto on a boto3 client (explicit fake: moto
answers every call at once, never throttles and reads back every write at once).

- Throttling: every attempt draws a token from its action's bucket (``ecs_read`` for Describe/List/
  Get, ``ecs_write`` for the rest, per account as ECS applies them); an empty bucket answers
  ``ThrottlingException`` (HTTP 400) without reaching moto, so botocore's retry mode sees what the
  service would send.
- Eventual consistency: for ``ecs_consistency_seconds`` (at ``quantile``, the p99 unless asked
  otherwise) after a TagResource or UntagResource, DescribeTasks shows the task's tags as they were
  before the write; after an UpdateTaskProtection, GetTaskProtection shows the protection this client
  last saw answered (by a read or a write) before it, for the same window.

Time is ``clock`` (seconds): the world's clock, so a test that moves it on moves ECS on too; the
buckets refill on ``rate_clock`` (real time unless told), since a world's clock stands still within
an invocation while its calls go out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse

from devkit.fakes.aws_faults import answered
from livekit_fleet_remediation.offline.service_profile import AWS_PROFILE, RateLimiter, ServiceProfile

WRITES_SHOWN_LATE = ("TagResource", "UntagResource")


class EcsAsTheProfileSays:
    def __init__(
        self,
        client: Any,
        clock: Callable[[], float],
        profile: ServiceProfile = AWS_PROFILE,
        quantile: float = 0.99,
        rate_clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self._rate_clock = rate_clock
        self._window = profile.ecs_consistency_seconds.at(quantile)
        self._buckets = {
            bucket: RateLimiter(profile.ecs_throttle(action), rate_clock())
            for bucket, action in (("read", "DescribeTasks"), ("write", "TagResource"))
        }
        # task ARN -> (shown until, the tags it showed before the write)
        self._stale: dict[str, tuple[float, list[Any]]] = {}
        # task ARN -> the protection this client last saw answered; (shown until, that answer)
        self._protection_seen: dict[str, dict[str, Any]] = {}
        self._protection_stale: dict[str, tuple[float, dict[str, Any]]] = {}
        self._reader = boto3.client("ecs", region_name=client.meta.region_name)  # not hooked
        self.throttled = 0
        client.meta.events.register_first("before-send.ecs", self._attempt)
        client.meta.events.register("after-call.ecs.DescribeTasks", self._describe)
        client.meta.events.register("after-call.ecs.GetTaskProtection", self._protection_read)

    def _attempt(self, request: Any, **_: Any) -> AWSResponse | None:
        action = str(request.headers.get("X-Amz-Target", b"")).rsplit(".", 1)[-1].strip("'")
        bucket = "read" if action.startswith(("Describe", "List", "Get")) else "write"
        if not self._buckets[bucket].take(self._rate_clock()):
            self.throttled += 1
            return answered(request, 400, {"__type": "ThrottlingException", "message": "Rate exceeded"})
        if action in WRITES_SHOWN_LATE:
            self._before_write(request)
        if action == "UpdateTaskProtection":
            self._protection_written(request)
        return None

    def _before_write(self, request: Any) -> None:
        arn = str(json.loads(request.body or b"{}").get("resourceArn", ""))
        now = self._clock()
        if ":task/" not in arn or (arn in self._stale and self._stale[arn][0] > now):
            return  # an earlier write's old tags are what still shows
        tags = self._reader.list_tags_for_resource(resourceArn=arn).get("tags", [])
        self._stale[arn] = (now + self._window, tags)

    def _describe(self, parsed: dict[str, Any], **_: Any) -> None:
        now = self._clock()
        for task in parsed.get("tasks", []):
            shown = self._stale.get(task.get("taskArn", ""))
            if shown is not None and shown[0] > now:
                task["tags"] = list(shown[1])

    def _protection_written(self, request: Any) -> None:
        """At the write's sending: what happens to its reply (lost, killed) cannot unsee it."""
        now = self._clock()
        for arn in json.loads(request.body or b"{}").get("tasks", []):
            before = self._protection_seen.get(arn)
            shown = self._protection_stale.get(arn)
            if before is not None and not (shown is not None and shown[0] > now):
                self._protection_stale[arn] = (now + self._window, before)

    def _protection_read(self, parsed: dict[str, Any], **_: Any) -> None:
        now = self._clock()
        answers = parsed.get("protectedTasks", [])
        for index, answer in enumerate(answers):
            arn = answer.get("taskArn", "")
            shown = self._protection_stale.get(arn)
            if shown is not None and shown[0] > now:
                answers[index] = dict(shown[1])
            else:
                self._protection_seen[arn] = dict(answer)
