"""A misbehaving AWS endpoint on loopback, for pointing a real boto3 client at (``endpoint_url`` or
``AWS_ENDPOINT_URL``): it works at the HTTP layer, below botocore's retries, so what the tests see
is what botocore's own timeouts and retry modes make of it.

    with AwsEndpoint(upstream=moto_url) as endpoint:
        endpoint.behave(Behaviour.THROTTLE, times=2)   # two throttling errors, then moto answers
        endpoint.behave(Behaviour.SILENT)              # accept, read the request, never answer
        endpoint.behave(Behaviour.SLOW, delay_s=0.5)   # answer, late

Behaviours:

- ``PASS``: forward to ``upstream`` (a moto server) and relay its answer.
- ``SILENT``: read the request and never answer (until ``behave``/``stop`` releases it).
- ``SLOW``: answer ``delay_s`` after the request arrived (forwarded at once; the upstream's own
  time is part of the delay, not added to it, so a loaded machine does not make the answer later).
- ``THROTTLE``: answer the next ``times`` requests with the protocol's throttling error (HTTP 400,
  ``ThrottlingException`` for JSON protocols, ``Throttling`` for the query protocol of SNS), then
  forward as ``PASS``.
- ``PROFILE``: as the service profile says (``behave(Behaviour.PROFILE, profile=AWS_PROFILE)``): each
  request draws a token from its action's bucket (``ServiceProfile.throttle_for``; ECS, Logs Insights)
  and is answered with the throttling error when the bucket is empty, else forwarded and answered
  ``api_call_seconds`` (at ``quantile``) after it arrived. The buckets refill on ``rate_clock``.

``requests`` counts the requests that arrived (each botocore attempt is one).
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlsplit

from livekit_fleet_remediation.offline.service_profile import RateLimiter, ServiceProfile


class Behaviour(StrEnum):
    PASS = "pass"
    SILENT = "silent"
    SLOW = "slow"
    THROTTLE = "throttle"
    PROFILE = "profile"


@dataclass
class _Plan:
    behaviour: Behaviour = Behaviour.PASS
    times: int = 0
    delay_s: float = 0.0
    profile: ServiceProfile | None = None


QUERY_THROTTLE = (
    b'<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><Error><Type>Sender</Type>'
    b"<Code>Throttling</Code><Message>Rate exceeded</Message></Error>"
    b"<RequestId>00000000-0000-0000-0000-000000000000</RequestId></ErrorResponse>"
)


class AwsEndpoint:
    def __init__(self, upstream: str | None = None, rate_clock: Callable[[], float] = time.monotonic) -> None:
        self.upstream = urlsplit(upstream) if upstream else None
        self._rate_clock = rate_clock
        self._buckets: dict[str, RateLimiter] = {}
        self.requests = 0
        self.throttled = 0
        self._plan = _Plan()
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="aws-endpoint", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def behave(
        self,
        behaviour: Behaviour,
        *,
        times: int = 0,
        delay_s: float = 0.0,
        profile: ServiceProfile | None = None,
        quantile: float = 0.5,
    ) -> None:
        """Apply ``behaviour`` from the next request on; requests held silent so far are released."""
        if behaviour is Behaviour.PROFILE and profile is None:
            raise ValueError("Behaviour.PROFILE needs the profile it follows")
        with self._lock:
            self._release.set()
            self._release = threading.Event()
            delay = profile.api_call_seconds.at(quantile) if profile is not None else delay_s
            self._plan = _Plan(behaviour, times, delay, profile)
            self._buckets = {}

    def start(self) -> AwsEndpoint:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> AwsEndpoint:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _next(self, target: str) -> tuple[Behaviour, float, threading.Event]:
        """Count the request and decide what it gets."""
        with self._lock:
            self.requests += 1
            plan = self._plan
            if plan.behaviour is Behaviour.PROFILE:
                return self._as_profiled(plan, target), plan.delay_s, self._release
            if plan.behaviour is Behaviour.THROTTLE:
                if plan.times <= 0:
                    return Behaviour.PASS, 0.0, self._release
                plan.times -= 1
                self.throttled += 1
            return plan.behaviour, plan.delay_s, self._release

    def _as_profiled(self, plan: _Plan, target: str) -> Behaviour:
        """Throttled when the action's bucket is empty; else answered after the profile's call time."""
        assert plan.profile is not None
        drawn = plan.profile.throttle_for(target)
        if drawn is None:
            return Behaviour.SLOW
        name, bucket = drawn
        limiter = self._buckets.setdefault(name, RateLimiter(bucket, self._rate_clock()))
        if limiter.take(self._rate_clock()):
            return Behaviour.SLOW
        self.throttled += 1
        return Behaviour.THROTTLE

    def _forward(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        if self.upstream is None or self.upstream.hostname is None:
            raise RuntimeError("this endpoint has no upstream to forward to")
        connection = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=30)
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            connection.close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                behaviour, delay_s, release = endpoint._next(self.headers.get("X-Amz-Target") or "")
                if behaviour is Behaviour.SILENT:
                    release.wait()
                    self.close_connection = True
                    return
                answer_at = time.monotonic() + (delay_s if behaviour is Behaviour.SLOW else 0.0)
                if behaviour is Behaviour.THROTTLE:
                    self._throttle()
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                status, reply_headers, reply = endpoint._forward("POST", self.path, headers, body)
                time.sleep(max(0.0, answer_at - time.monotonic()))
                self.send_response(status)
                for name, value in reply_headers:
                    if name.lower() not in (
                        "content-length",
                        "transfer-encoding",
                        "connection",
                        "date",
                        "server",
                    ):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def _throttle(self) -> None:
                target = self.headers.get("X-Amz-Target")
                if target:
                    reply = json.dumps({"__type": "ThrottlingException", "message": "Rate exceeded"}).encode()
                    content_type = "application/x-amz-json-1.1"
                else:
                    reply, content_type = QUERY_THROTTLE, "text/xml"
                self.send_response(400)
                self.send_header("Content-Type", content_type)
                self.send_header("x-amzn-ErrorType", "ThrottlingException")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        return Handler
