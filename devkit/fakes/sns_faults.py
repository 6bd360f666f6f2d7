"""An SNS that throttles: moto's SNS never does.

``SnsThrottling`` answers the next ``times`` Publish calls of a (moto-backed) client with SNS's
``Throttling`` error at ``before-call``, so the throttled call never reaches moto and nothing is
published behind the error. Safe to share between threads: boto3 clients are, and the count is
taken under a lock, so "one throttled publish among ten concurrent ones" means exactly one.
"""

from __future__ import annotations

import threading
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders


class SnsThrottling:
    def __init__(self, client: Any, times: int, code: str = "Throttling") -> None:
        self.remaining = times
        self.code = code
        self.throttled = 0
        self.passed = 0
        self._lock = threading.Lock()
        client.meta.events.register_first("before-call.sns.Publish", self._call)

    def _call(self, **_: Any) -> tuple[Any, dict[str, Any]] | None:
        with self._lock:
            if self.remaining <= 0:
                self.passed += 1
                return None
            self.remaining -= 1
            self.throttled += 1
        error = {
            "Error": {"Code": self.code, "Message": "Rate exceeded"},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }
        return AWSResponse("https://sns.fake", 400, HTTPHeaders(), None), error
