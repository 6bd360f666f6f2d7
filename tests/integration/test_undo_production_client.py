"""``lkfr undo`` with its production client (``aws_client`` under ``invoke_budget``, built by the
command itself: no injected invoker) against a local Lambda peer on loopback: a small explicit
``http.server`` that speaks the two Lambda REST calls the command makes (GetFunctionConfiguration,
Invoke) and counts the invokes. moto's Lambda would run the function in Docker; the command's
concern is the transport, which this peer serves as Lambda does.

A destructive command is invoked exactly once: an invoke answered 5xx may have run the function, so
it is never sent again (a retry could undo twice), and the command says the outcome is unknown."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from livekit_fleet_remediation.cli import undo

DRAINER = "lkfr-prod-agents-worker-drainer"
REPORT = {
    "function": "worker_drainer",
    "environment": "prod",
    "trigger": {"kind": "manual", "source": "invoke"},
    "mode": "enforce",
    "status": "ok",
    "candidates": [{"resource": "2789d238", "decision": "act", "reason": "undo: asked by an operator"}],
    "actions": [{"resource": "2789d238", "action": "undo", "outcome": "done"}],
    "errors": [],
    "summary": {},
}


@dataclass
class LambdaPeer:
    """What the peer answers to an invoke (an HTTP status), and the invokes it received."""

    invoke_status: int = 500
    invokes: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""
    # What the configuration read answers: 200 with the function's configuration, or a refusal.
    configuration_status: int = 200
    configuration_error: str = "AccessDeniedException"
    invocation_types: list[str | None] = field(default_factory=list)
    # The region each request was signed for (its SigV4 credential scope).
    regions: list[str] = field(default_factory=list)


def _handler(peer: LambdaPeer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _answer(self, status: int, body: dict[str, Any], **headers: str) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _signed_for(self) -> None:
            scope = self.headers.get("Authorization", "").split("Credential=")[-1].split(",")[0]
            peer.regions.append(scope.split("/")[2] if scope.count("/") >= 4 else "")

        def do_GET(self) -> None:
            self._signed_for()
            if not self.path.endswith(f"/functions/{DRAINER}/configuration"):
                self._answer(404, {"Type": "User", "message": "not found"})
            elif peer.configuration_status != 200:
                self._answer(
                    peer.configuration_status,
                    {"Type": "User", "message": "refused"},
                    **{"x-amzn-ErrorType": peer.configuration_error},
                )
            else:
                self._answer(200, {"FunctionName": DRAINER, "Timeout": 3})

        def do_POST(self) -> None:
            self._signed_for()
            length = int(self.headers.get("Content-Length", "0"))
            payload = self.rfile.read(length)
            if not self.path.endswith(f"/functions/{DRAINER}/invocations"):
                self._answer(404, {"Type": "User", "message": "not found"})
                return
            peer.invokes.append(json.loads(payload))
            peer.invocation_types.append(self.headers.get("X-Amz-Invocation-Type"))
            if peer.invoke_status >= 500:
                self._answer(
                    peer.invoke_status,
                    {"Type": "Service", "message": "internal failure"},
                    **{"x-amzn-ErrorType": "ServiceException"},
                )
            else:
                self._answer(200, REPORT)

    return Handler


@pytest.fixture
def peer(monkeypatch: pytest.MonkeyPatch) -> Iterator[LambdaPeer]:
    found = LambdaPeer()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(found))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    found.url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", found.url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    # The region is the command's --region, never a default of the shell.
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()


ARGV = ["--env", "prod", "--task", "2789d238", "--region", "eu-west-1"]


@pytest.mark.parametrize("status", [500, 502, 503])
def test_an_undo_answered_5xx_is_invoked_exactly_once_and_its_outcome_is_unknown(
    peer: LambdaPeer, status: int, capsys: pytest.CaptureFixture[str]
) -> None:
    peer.invoke_status = status
    assert undo.main(ARGV) == 1
    assert peer.invokes == [{"action": "undrain", "task": "2789d238", "dry_run": False}], (
        "one attempt: a retried invoke could act twice"
    )
    assert "undo failed: OutcomeUnknown" in capsys.readouterr().err


def test_the_same_client_gets_the_drainers_report_when_the_peer_answers(
    peer: LambdaPeer, capsys: pytest.CaptureFixture[str]
) -> None:
    peer.invoke_status = 200
    assert undo.main(ARGV) == 0
    assert len(peer.invokes) == 1
    # A synchronous invoke: the command waits for the drainer's report.
    assert peer.invocation_types == ["RequestResponse"]
    # The configuration read and the invoke, both in the region the command was given.
    assert peer.regions == ["eu-west-1", "eu-west-1"]
    assert "-> undo 2789d238: done" in capsys.readouterr().out


def test_a_drainer_whose_configuration_cannot_be_read_is_never_invoked(
    peer: LambdaPeer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The configuration read refused for the credentials' permissions: one typed line that says
    what to fix, and no invoke."""
    peer.configuration_status, peer.configuration_error = 403, "AccessDeniedException"
    assert undo.main(ARGV) == 1
    assert peer.invokes == []
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        f"undo failed: ConfigurationError: cannot read {DRAINER}'s configuration: the AWS credentials "
        f"are valid but not allowed to call GetFunctionConfiguration on {DRAINER} "
        "(AccessDeniedException): use a role that allows it, or ask for that permission"
    )


def test_a_drainer_that_is_not_deployed_says_so_and_is_never_invoked(
    peer: LambdaPeer, capsys: pytest.CaptureFixture[str]
) -> None:
    peer.configuration_status, peer.configuration_error = 404, "ResourceNotFoundException"
    assert undo.main(ARGV) == 1
    assert peer.invokes == []
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"undo failed: ConfigurationError: cannot read {DRAINER}'s configuration: ")
    assert "ResourceNotFoundException" in line
