"""Load a page in a real headless Chromium (Debian's ``chromium``) and report what happened, over the
DevTools protocol (a websocket; aiohttp's client): console errors, uncaught exceptions, every network
request, the values of a few expressions evaluated in the page, and a full-page screenshot.

Every step has a deadline; the browser is a child process with its own profile directory, ended
when the load is done. Used by the page tests and never deployed.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM_NAMES = ("chromium", "chromium-browser")


def find_chromium() -> str:
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise FileNotFoundError("chromium not found; install Debian's package: apt-get install -y chromium")


@dataclass
class PageLoad:
    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    screenshot: bytes = b""


class DevToolsSession:
    """One page target over the browser's DevTools websocket (flattened sessions)."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse, timeout: float) -> None:
        self.socket = socket
        self.timeout = timeout
        self.session_id: str | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self.socket:
            if message.type is not aiohttp.WSMsgType.TEXT:
                continue
            payload = message.json()
            waiter = self._waiting.pop(payload.get("id", -1), None)
            if waiter is not None and not waiter.done():
                waiter.set_result(payload)
            elif "method" in payload:
                await self._events.put(payload)

    async def send(
        self, method: str, params: Mapping[str, Any] | None = None, *, browser: bool = False
    ) -> Any:
        ident = next(self._ids)
        request: dict[str, Any] = {"id": ident, "method": method, "params": dict(params or {})}
        if self.session_id and not browser:
            request["sessionId"] = self.session_id
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = waiter
        await self.socket.send_json(request)
        answer = await asyncio.wait_for(waiter, self.timeout)
        if "error" in answer:
            raise RuntimeError(f"DevTools {method} failed: {answer['error']}")
        return answer.get("result", {})

    async def next_event(self, deadline: float) -> dict[str, Any] | None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        try:
            return await asyncio.wait_for(self._events.get(), remaining)
        except TimeoutError:
            return None

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


async def _devtools_url(profile: Path, process: subprocess.Popen[bytes], deadline: float) -> str:
    """Chromium writes its DevTools port (chosen at random: port 0) into the profile directory."""
    marker = profile / "DevToolsActivePort"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"chromium exited with {process.returncode} before DevTools was up")
        if marker.exists():
            lines = marker.read_text().split()
            if len(lines) >= 2:
                return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
        await asyncio.sleep(0.05)
    raise TimeoutError("chromium did not open its DevTools port in time")


def _start_chromium(profile: Path, width: int, height: int, output: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            find_chromium(),
            "--headless=new",
            "--no-sandbox",  # root in a container has no user namespace sandbox
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "about:blank",
        ],
        stdout=output,
        stderr=subprocess.STDOUT,
        # Its own process group: the browser's helpers (zygote, renderers) end with it.
        start_new_session=True,
    )


def _end(process: subprocess.Popen[bytes], grace_seconds: float = 10.0) -> None:
    """End the browser and every helper of its process group, and wait until they are gone (they
    write into the profile directory until then)."""
    group = process.pid
    deadline = time.monotonic() + grace_seconds
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        while time.monotonic() < deadline:
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
        deadline = time.monotonic() + grace_seconds


async def _drive(
    process: subprocess.Popen[bytes],
    profile: Path,
    url: str,
    expressions: Mapping[str, str],
    width: int,
    height: int,
    deadline: float,
    actions: Sequence[str] = (),
    wait_for: str | None = None,
) -> PageLoad:
    result = PageLoad()
    devtools = await _devtools_url(profile, process, deadline)
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(devtools, max_msg_size=0, timeout=aiohttp.ClientWSTimeout(ws_close=5)) as socket,
    ):
        session = DevToolsSession(socket, max(1.0, deadline - time.monotonic()))
        try:
            await _inspect(session, url, expressions, (width, height), deadline, result, actions, wait_for)
        finally:
            with contextlib.suppress(Exception):
                await session.send("Browser.close", browser=True)
            await session.close()
    return result


async def _inspect(
    session: DevToolsSession,
    url: str,
    expressions: Mapping[str, str],
    size: tuple[int, int],
    deadline: float,
    result: PageLoad,
    actions: Sequence[str] = (),
    wait_for: str | None = None,
) -> None:
    width, height = size
    target = await session.send("Target.createTarget", {"url": "about:blank"}, browser=True)
    attached = await session.send(
        "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, browser=True
    )
    session.session_id = attached["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        await session.send(f"{domain}.enable")
    await session.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )
    await session.send("Page.navigate", {"url": url})
    loaded = False
    while not loaded:
        event = await session.next_event(deadline)
        if event is None:
            raise TimeoutError(f"{url} did not finish loading in time")
        loaded = _record(event, result)
    # Late console messages or errors still in flight after the load event.
    await _settle(session, deadline, result)
    await _act_and_wait(session, actions, wait_for, deadline, result)
    for name, expression in expressions.items():
        answer = await session.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in answer:
            result.exceptions.append(f"evaluating {name}: {answer['exceptionDetails'].get('text')}")
        result.values[name] = answer.get("result", {}).get("value")
    metrics = await session.send("Page.getLayoutMetrics")
    content = metrics.get("cssContentSize") or metrics["contentSize"]
    shot = await session.send(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": content["height"], "scale": 1},
        },
    )
    result.screenshot = base64.b64decode(shot["data"])


async def _act_and_wait(
    session: DevToolsSession, actions: Sequence[str], wait_for: str | None, deadline: float, result: PageLoad
) -> None:
    """Run ``actions`` in the page (a user's typing), then poll ``wait_for`` until it is true: what
    the page does on its own after the load (a search answered by its worker) has happened."""
    for action in actions:
        answer = await session.send("Runtime.evaluate", {"expression": action, "returnByValue": True})
        if "exceptionDetails" in answer:
            result.exceptions.append(f"running {action[:60]}: {answer['exceptionDetails'].get('text')}")
    while wait_for is not None:
        answer = await session.send("Runtime.evaluate", {"expression": wait_for, "returnByValue": True})
        if answer.get("result", {}).get("value"):
            # What the page requested or logged on its way there may still be queued.
            await _settle(session, deadline, result)
            return
        if time.monotonic() > deadline - 1:
            raise TimeoutError(f"the page never made {wait_for} true")
        while (event := await session.next_event(min(deadline, time.monotonic() + 0.2))) is not None:
            _record(event, result)


async def _settle(session: DevToolsSession, deadline: float, result: PageLoad, seconds: float = 0.5) -> None:
    """Record the events already sent or arriving within ``seconds``."""
    settle = min(deadline, time.monotonic() + seconds)
    while (event := await session.next_event(settle)) is not None:
        _record(event, result)


def _record(event: dict[str, Any], result: PageLoad) -> bool:
    """Keep what matters from one DevTools event; True for the page's load event."""
    method, params = event.get("method"), event.get("params", {})
    if method == "Runtime.exceptionThrown":
        details = params.get("exceptionDetails", {})
        result.exceptions.append(str(details.get("exception", {}).get("description") or details.get("text")))
    elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
        result.console_errors.append(
            " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
        )
    elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
        result.console_errors.append(str(params["entry"].get("text")))
    elif method == "Network.requestWillBeSent":
        result.requests.append(str(params.get("request", {}).get("url")))
    return method == "Page.loadEventFired"


def load_page(
    page: Path | str,
    expressions: Mapping[str, str] | None = None,
    *,
    width: int = 1400,
    height: int = 1000,
    timeout: float = 60.0,
    log: Path | None = None,
    query: str = "",
    actions: Sequence[str] = (),
    wait_for: str | None = None,
) -> PageLoad:
    """Open ``page`` (a local file, or a URL given as a string; with ``?query`` when given) in
    headless Chromium and report what happened; ``actions`` and ``wait_for``: see ``_act_and_wait``."""
    deadline = time.monotonic() + timeout
    with (
        tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile_dir,
        contextlib.ExitStack() as stack,
    ):
        profile = Path(profile_dir)
        output = stack.enter_context(log.open("wb")) if log else subprocess.DEVNULL
        process = _start_chromium(profile, width, height, output)
        try:
            address = page if isinstance(page, str) else page.resolve().as_uri()
            url = address + (f"?{query}" if query else "")
            drive = _drive(
                process, profile, url, expressions or {}, width, height, deadline, actions, wait_for
            )
            # The whole conversation, connection included, ends by the deadline.
            return asyncio.run(asyncio.wait_for(drive, timeout))
        finally:
            _end(process)
