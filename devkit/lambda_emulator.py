"""Run a synthesized function the way Lambda does, under AWS's Runtime Interface Emulator (RIE).

Layout (what Lambda builds from the deployment package and the layers):
- task root (``/var/task``, ``LAMBDA_TASK_ROOT``, the working directory): the function's code asset
  folder as synthesized, used in place;
- ``/opt``: every layer's content extracted in layer order, a later layer overwriting an earlier
  one's files, as Lambda extracts layer archives into /opt;
- the runtime: a Python with only the runtime-included libraries (boto3 and its dependencies) and
  the runtime interface client ``awslambdaric`` in its site-packages, behind the task root and the
  layers on the path (``make lambda-runtime`` builds it under build/lambda-local/runtime).

The RIE serves the Invoke API on 127.0.0.1 (``POST /2015-03-31/functions/function/invocations``,
what ``aws lambda invoke`` calls) and starts ``python -m awslambdaric <handler>`` as the bootstrap
on the first invoke, passing it its own environment; that environment is built here from scratch
(nothing of the calling process leaks into it).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from devkit.lambda_artifact import REPO_ROOT, FunctionArtifact

RIE_BIN = REPO_ROOT / ".tools" / "bin" / "aws-lambda-rie"
LOCAL_LAMBDA_DIR = REPO_ROOT / "build" / "lambda-local"
LOCAL_RUNTIME = LOCAL_LAMBDA_DIR / "runtime"
LOCAL_DEPS_LAYER = LOCAL_LAMBDA_DIR / "deps"
INVOKE_PATH = "/2015-03-31/functions/function/invocations"
# The RIE names every invoked function arn:aws:lambda:us-east-1:012345678912:function:<name>, whatever
# the region: a function's door admits only EventBridge events of this account and region.
RIE_FUNCTION_ACCOUNT, RIE_FUNCTION_REGION = "012345678912", "us-east-1"
# Variables Lambda reserves: a template that set one would be rejected by Lambda.
RESERVED_VARIABLES = frozenset(
    {
        "_HANDLER",
        "_X_AMZN_TRACE_ID",
        "AWS_DEFAULT_REGION",
        "AWS_REGION",
        "AWS_EXECUTION_ENV",
        "AWS_LAMBDA_FUNCTION_NAME",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
        "AWS_LAMBDA_FUNCTION_VERSION",
        "AWS_LAMBDA_INITIALIZATION_TYPE",
        "AWS_LAMBDA_LOG_GROUP_NAME",
        "AWS_LAMBDA_LOG_STREAM_NAME",
        "AWS_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_LAMBDA_RUNTIME_API",
        "LAMBDA_TASK_ROOT",
        "LAMBDA_RUNTIME_DIR",
    }
)
_INIT_REPORT = re.compile(r"INIT REPORT\(durationMs: (?P<ms>[\d.]+)\)")
_INVOKE_START = re.compile(r"INVOKE START\(requestId: (?P<id>[^)]+)\)")


class EmulatorError(Exception):
    """The emulator or the runtime did not behave as Lambda's would."""


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def runtime_python(local_lambda: Path = LOCAL_LAMBDA_DIR) -> Path:
    """The local runtime's Python under ``local_lambda`` (``make lambda-runtime LOCAL_LAMBDA=DIR`` builds
    one beside the default, e.g. for another ``LAMBDA_LOCAL_PYTHON``)."""
    python = local_lambda / "runtime" / "bin" / "python"
    if not python.exists():
        raise FileNotFoundError(f"{python} is missing; run `make lambda-runtime`")
    return python


def rie_binary() -> Path:
    if not RIE_BIN.exists():
        raise FileNotFoundError(f"{RIE_BIN} is missing; run `make lambda-runtime`")
    return RIE_BIN


def _link_or_copy(src: str, dst: str) -> None:
    # Hard links keep a layout of the whole dependency layer cheap; a later layer replaces the link.
    if os.path.lexists(dst):
        os.unlink(dst)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def extract_layers(layer_dirs: list[Path], opt: Path) -> Path:
    """Merge the layers into ``opt`` in order, later files overwriting earlier ones (as Lambda does)."""
    opt.mkdir(parents=True, exist_ok=True)
    for layer in layer_dirs:
        shutil.copytree(layer, opt, dirs_exist_ok=True, copy_function=_link_or_copy)
    return opt


@dataclass(frozen=True)
class FunctionLayout:
    task_root: Path
    opt: Path
    python: Path

    def python_path(self) -> str:
        """Task root first, then the layers' two Python folders, as the Lambda Python runtimes order
        them; the runtime's own site-packages (boto3, awslambdaric) come after these."""
        major, minor, _ = python_version(self.python).split(".")
        return os.pathsep.join(
            [
                str(self.task_root),
                str(self.opt / "python" / "lib" / f"python{major}.{minor}" / "site-packages"),
                str(self.opt / "python"),
            ]
        )


@functools.cache
def python_version(python: Path) -> str:
    """``3.11.7`` for the interpreter at ``python``."""
    done = subprocess.run(
        [str(python), "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    return done.stdout.strip()


def lambda_environment(
    function: FunctionArtifact,
    variables: Mapping[str, str],
    layout: FunctionLayout,
    *,
    region: str,
    xray_daemon_address: str,
    aws_endpoint_url: str,
) -> dict[str, str]:
    """The function's environment variables (already resolved) plus what Lambda itself sets.

    Local substitutions, and only these: credentials are fake, ``AWS_ENDPOINT_URL`` sends every AWS
    SDK call to the local AWS stand-in, the X-Ray daemon address is a local UDP port, and
    ``PYTHONDONTWRITEBYTECODE`` stands for Lambda's read-only task root (no __pycache__ written
    into the synthesized asset)."""
    clashes = sorted(RESERVED_VARIABLES & set(variables))
    if clashes:
        raise EmulatorError(
            f"{function.function_name}: the template sets Lambda-reserved variables {clashes}"
        )
    host, _, port = xray_daemon_address.rpartition(":")
    environment = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "en_US.UTF-8",
        "TZ": ":UTC",
        "LD_LIBRARY_PATH": f"{layout.opt / 'lib'}",
        "PYTHONPATH": layout.python_path(),
        "PYTHONDONTWRITEBYTECODE": "1",
        "LAMBDA_TASK_ROOT": str(layout.task_root),
        "LAMBDA_RUNTIME_DIR": str(layout.python.parent.parent),
        "_HANDLER": function.handler,
        "AWS_EXECUTION_ENV": f"AWS_Lambda_{function.runtime}",
        "AWS_LAMBDA_FUNCTION_NAME": function.function_name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_mb),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        # The emulator enforces the function's timeout from this variable.
        "AWS_LAMBDA_FUNCTION_TIMEOUT": str(function.timeout_seconds),
        "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function.function_name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": "local/[$LATEST]emulated",
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "AWS_ACCESS_KEY_ID": "ASIALOCALEMULATOR000",
        "AWS_SECRET_ACCESS_KEY": "local-emulator-secret",
        "AWS_SESSION_TOKEN": "local-emulator-session",
        "AWS_ENDPOINT_URL": aws_endpoint_url,
        "AWS_XRAY_DAEMON_ADDRESS": xray_daemon_address,
        "_AWS_XRAY_DAEMON_ADDRESS": host,
        "_AWS_XRAY_DAEMON_PORT": port,
        "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
    }
    environment.update(variables)
    return environment


def dependency_layer_id(function: FunctionArtifact) -> str:
    """The layer pip built (it holds *.dist-info folders): the one rebuilt for this machine's Python."""
    ids = [layer.logical_id for layer in function.layers if any((layer.path / "python").glob("*.dist-info"))]
    if len(ids) != 1:
        raise EmulatorError(f"{function.function_name}: expected one dependency layer, found {ids}")
    return ids[0]


def emulated_from_template(
    function: FunctionArtifact,
    variables: Mapping[str, str],
    workdir: Path,
    name: str,
    *,
    region: str,
    xray_daemon_address: str,
    aws_endpoint_url: str,
    python_options: tuple[str, ...] = (),
) -> EmulatedFunction:
    """The synthesized function as Lambda lays it out, not yet started: its code asset as the task
    root, its layers merged in the template's order (the dependency layer rebuilt for this machine's
    Python, ``LOCAL_DEPS_LAYER``), its resolved ``variables`` and what Lambda sets."""
    deps_id = dependency_layer_id(function)
    layers = [LOCAL_DEPS_LAYER if layer.logical_id == deps_id else layer.path for layer in function.layers]
    layout = FunctionLayout(
        task_root=function.code_dir,
        opt=extract_layers(layers, workdir / "opt" / name),
        python=runtime_python(),
    )
    environment = lambda_environment(
        function,
        variables,
        layout,
        region=region,
        xray_daemon_address=xray_daemon_address,
        aws_endpoint_url=aws_endpoint_url,
    )
    return EmulatedFunction(function, layout, environment, workdir / f"{name}.log", python_options)


@dataclass
class Invocation:
    request_id: str
    status_code: int
    body: Any
    seconds: float
    init_ms: float | None = None

    @property
    def function_error(self) -> str | None:
        """The runtime's error type when the handler raised (Lambda's X-Amz-Function-Error case)."""
        if isinstance(self.body, dict) and "errorType" in self.body and "errorMessage" in self.body:
            return str(self.body["errorType"])
        return None


@dataclass
class EmulatedFunction:
    """One function under the RIE on 127.0.0.1; a context manager that always stops what it started."""

    function: FunctionArtifact
    layout: FunctionLayout
    environment: dict[str, str]
    log_path: Path
    # Interpreter options for the bootstrap (the smoke test turns deprecation warnings into errors).
    python_options: tuple[str, ...] = ()
    port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self, timeout: float = 10.0) -> EmulatedFunction:
        self.port = free_port()
        command = [
            str(rie_binary()),
            "--runtime-interface-emulator-address",
            f"127.0.0.1:{self.port}",
            "--runtime-api-address",
            f"127.0.0.1:{free_port()}",
            str(self.layout.python),
            *self.python_options,
            "-m",
            "awslambdaric",
            self.function.handler,
        ]
        with self.log_path.open("wb") as log:
            # Its own process group: stopping it also stops the bootstrap the RIE started.
            self.process = subprocess.Popen(
                command,
                cwd=self.layout.task_root,
                env=self.environment,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise EmulatorError(
                    f"aws-lambda-rie exited with {self.process.returncode}: {self.log_tail()}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise EmulatorError(f"aws-lambda-rie did not listen on 127.0.0.1:{self.port} within {timeout}s")

    def invoke(self, payload: Any, timeout: float) -> Invocation:
        """POST the payload as ``aws lambda invoke`` does (RequestResponse), with an X-Ray trace header
        as Lambda sends when active tracing is on; ``timeout`` bounds the whole wait."""
        request_id = str(uuid.uuid4())
        trace = (
            f"Root=1-{int(time.time()):08x}-{secrets.token_hex(12)};Parent={secrets.token_hex(8)};Sampled=1"
        )
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{INVOKE_PATH}",
            data=json.dumps(payload).encode(),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "X-Amzn-RequestId": request_id,
                "X-Amzn-Trace-Id": trace,
            },
        )
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        except (TimeoutError, urllib.error.URLError) as exc:
            raise EmulatorError(
                f"{self.function.function_name}: no answer within {timeout}s ({exc}): {self.log_tail()}"
            ) from exc
        seconds = time.monotonic() - started
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode(errors="replace")
        return Invocation(request_id, status, body, seconds, self._init_ms(request_id))

    def _init_ms(self, request_id: str) -> float | None:
        """The cold start's init phase (bootstrap start and handler import) that preceded this invoke,
        from the RIE's ``INIT REPORT`` line; None for a warm invoke."""
        init_ms = None
        for line in self.log_path.read_text(errors="replace").splitlines():
            if match := _INIT_REPORT.search(line):
                init_ms = float(match["ms"])
            elif match := _INVOKE_START.search(line):
                if match["id"] == request_id:
                    return init_ms
                init_ms = None
        return None

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""

    def stop(self) -> None:
        """Stop the RIE and the bootstrap it started (the whole process group, which outlives the RIE
        only while one of its processes does, so its id cannot have been reused)."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def __enter__(self) -> EmulatedFunction:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
