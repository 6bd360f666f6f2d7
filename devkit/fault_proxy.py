"""A fault-injecting HTTP/1.1 proxy on loopback, for putting in front of a real livekit-server.

It understands just enough HTTP to work per request (keep-alive connections carry many): each
request is read whole, the current fault plan is applied to it, and the reply is read whole before
it is passed on, modified or withheld. It runs its own event loop in a daemon thread, so tests that
call a synchronous Lambda handler (which runs ``asyncio.run``) can use it from the test thread.

    with FaultProxy("127.0.0.1", livekit.port) as proxy:
        proxy.inject(Fault.HANG_BEFORE_FORWARD, methods={"DeleteRoom"})
        ...  # point the client at proxy.url; ListRooms passes, DeleteRoom never gets an answer
        proxy.inject(Fault.DELAY, delay_ms=20)  # 20 ms each way, for every request
        proxy.clear()

Faults (each applies to requests whose Twirp method, the last path segment, is in ``methods``,
or to every request when ``methods`` is None, after the first ``skip`` of them):

- ``PASS``: forward unchanged.
- ``HANG_BEFORE_FORWARD``: read the request and never answer; the server never sees it.
- ``HANG_AFTER_ANSWER``: forward the request, let the server answer, swallow the reply and
  never answer (the server acted; the client cannot know).
- ``DELAY``: hold the request ``delay_ms`` before forwarding and the reply ``delay_ms`` before
  passing it on (one network leg each way); a new connection's first request also waits one
  round trip (the TCP handshake).
- ``CUT_BEFORE_FORWARD`` / ``CUT_AFTER_ANSWER``: reset the client's connection (RST), before the
  server sees the request / after it answered.
- ``CORRUPT_BODY``: forward, then replace the reply's body with bytes that are not valid protobuf
  (an invalid wire type), keeping the status line (a 200 stays a 200).
- ``SERVER_ERROR_AFTER_FORWARD``: forward, let the server act, and answer ``status`` (default 502)
  with a plain-text body, as a load balancer in front of the server would.

Hung requests are released (their connections closed) by ``clear()``, a new ``inject()`` or
``stop()``. ``requests`` lists the Twirp methods seen, in order; ``forwarded`` those that reached
the server.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from dataclasses import dataclass, field
from enum import StrEnum
from types import TracebackType

HEADER_LIMIT = 64 * 1024
# 0xff starts a field with wire type 7, which does not exist: no protobuf message parses it.
CORRUPT_PROTOBUF = b"\xff\xff\xff\xff"


class Fault(StrEnum):
    PASS = "pass"
    HANG_BEFORE_FORWARD = "hang-before-forward"
    HANG_AFTER_ANSWER = "hang-after-answer"
    DELAY = "delay"
    CUT_BEFORE_FORWARD = "cut-before-forward"
    CUT_AFTER_ANSWER = "cut-after-answer"
    CORRUPT_BODY = "corrupt-body"
    SERVER_ERROR_AFTER_FORWARD = "server-error-after-forward"


@dataclass(frozen=True)
class FaultPlan:
    fault: Fault = Fault.PASS
    methods: frozenset[str] | None = None
    delay_ms: float = 0.0
    status: int = 502
    # The first ``skip`` matching requests pass untouched (e.g. the reaper's listing before its
    # re-check, which is the same method).
    skip: int = 0

    def applies_to(self, method: str) -> bool:
        return self.methods is None or method in self.methods


@dataclass
class _Message:
    """One HTTP message: the start line, headers (original case and order) and the whole body."""

    start_line: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes

    def header(self, name: bytes) -> bytes | None:
        return next((v for k, v in self.headers if k.lower() == name), None)

    def encode(self) -> bytes:
        # Re-framed with Content-Length whatever the original framing (chunked replies included).
        kept = [(k, v) for k, v in self.headers if k.lower() not in (b"content-length", b"transfer-encoding")]
        kept.append((b"Content-Length", str(len(self.body)).encode()))
        head = b"".join(k + b": " + v + b"\r\n" for k, v in kept)
        return self.start_line + b"\r\n" + head + b"\r\n" + self.body


async def _read_message(reader: asyncio.StreamReader) -> _Message | None:
    """The next message on the stream, or None when the peer closed it between messages."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise ConnectionError("connection closed inside an HTTP message head") from exc
        return None
    start_line, *lines = head[:-4].split(b"\r\n")
    headers = [(k.strip(), v.strip()) for k, _, v in (line.partition(b":") for line in lines)]
    message = _Message(start_line, headers, b"")
    if (message.header(b"transfer-encoding") or b"").lower() == b"chunked":
        chunks = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            chunks.append(await reader.readexactly(size))
            await reader.readuntil(b"\r\n")  # the chunk's CRLF, or the end of the (empty) trailer
            if size == 0:
                break
        message.body = b"".join(chunks)
    else:
        message.body = await reader.readexactly(int(message.header(b"content-length") or 0))
    return message


def _twirp_method(request: _Message) -> str:
    # "POST /twirp/livekit.RoomService/DeleteRoom HTTP/1.1" -> "DeleteRoom"
    parts = request.start_line.split(b" ")
    return parts[1].rsplit(b"/", 1)[-1].decode(errors="replace") if len(parts) > 1 else ""


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with RST rather than FIN: what a crashed peer or a middlebox timeout looks like."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


@dataclass
class FaultProxy:
    """A proxy from ``127.0.0.1:<free port>`` to ``upstream_host:upstream_port``."""

    upstream_host: str
    upstream_port: int
    plan: FaultPlan = field(default_factory=FaultPlan)
    port: int = 0
    requests: list[str] = field(default_factory=list)
    forwarded: list[str] = field(default_factory=list)
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _server: asyncio.Server | None = None
    _release: asyncio.Event | None = None
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)
    _skipped: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def inject(
        self,
        fault: Fault,
        *,
        methods: set[str] | frozenset[str] | None = None,
        delay_ms: float = 0.0,
        status: int = 502,
        skip: int = 0,
    ) -> None:
        """Apply ``fault`` from the next request on; requests hung by the previous plan are released."""
        self._release_hung()
        methods_set = frozenset(methods) if methods is not None else None
        self.plan = FaultPlan(fault, methods_set, delay_ms, status, skip)
        self._skipped = 0

    def clear(self) -> None:
        self.inject(Fault.PASS)

    def start(self) -> FaultProxy:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        async def serve() -> None:
            self._release = asyncio.Event()
            self._server = await asyncio.start_server(
                self._handle, "127.0.0.1", self.port, limit=HEADER_LIMIT
            )
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(serve())
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="fault-proxy", daemon=True)
        self._thread.start()
        if not ready.wait(5):
            raise RuntimeError("fault proxy did not start within 5 s")
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        async def shutdown() -> None:
            assert self._server is not None
            self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            handlers = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in handlers:
                task.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)
            loop.stop()

        asyncio.run_coroutine_threadsafe(shutdown(), loop)
        thread.join(timeout=5)
        loop.close()
        self._loop = self._thread = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _release_hung(self) -> None:
        loop = self._loop
        if loop is None:
            return

        asyncio.run_coroutine_threadsafe(self._swap_release(), loop).result(5)

    async def _swap_release(self) -> None:
        assert self._release is not None
        self._release.set()
        self._release = asyncio.Event()

    async def _hang(self, writer: asyncio.StreamWriter) -> None:
        """Hold the connection open, answering nothing, until the plan changes or the proxy stops."""
        assert self._release is not None
        await self._release.wait()
        writer.transport.abort()

    async def _handle(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self._writers.add(client_writer)
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        first = True
        try:
            while (request := await _read_message(client_reader)) is not None:
                method = _twirp_method(request)
                self.requests.append(method)
                plan = self.plan if self.plan.applies_to(method) else FaultPlan()
                if plan.fault is not Fault.PASS and self._skipped < plan.skip:
                    self._skipped += 1
                    plan = FaultPlan()
                match plan.fault:
                    case Fault.HANG_BEFORE_FORWARD:
                        return await self._hang(client_writer)
                    case Fault.CUT_BEFORE_FORWARD:
                        return _reset(client_writer)
                    case Fault.DELAY:
                        await asyncio.sleep(plan.delay_ms * (3 if first else 1) / 1000)
                first = False
                if upstream is None:
                    upstream = await asyncio.open_connection(
                        self.upstream_host, self.upstream_port, limit=HEADER_LIMIT
                    )
                upstream[1].write(request.encode())
                await upstream[1].drain()
                self.forwarded.append(method)
                reply = await _read_message(upstream[0])
                if reply is None:
                    return _reset(client_writer)
                match plan.fault:
                    case Fault.HANG_AFTER_ANSWER:
                        return await self._hang(client_writer)
                    case Fault.CUT_AFTER_ANSWER:
                        return _reset(client_writer)
                    case Fault.DELAY:
                        await asyncio.sleep(plan.delay_ms / 1000)
                    case Fault.CORRUPT_BODY:
                        reply.body = CORRUPT_PROTOBUF
                    case Fault.SERVER_ERROR_AFTER_FORWARD:
                        reply = _Message(
                            f"HTTP/1.1 {plan.status} Proxy Error".encode(),
                            [(b"Content-Type", b"text/plain")],
                            f"{plan.status} from the fault proxy (the server did answer)\n".encode(),
                        )
                client_writer.write(reply.encode())
                await client_writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            client_writer.transport.abort()
        finally:
            self._writers.discard(client_writer)
            if upstream is not None:
                upstream[1].transport.abort()
            if not client_writer.transport.is_closing():
                client_writer.close()
