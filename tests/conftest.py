"""Session-wide fixtures: quiet Powertools, fake AWS credentials, the real local livekit-server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Set before any handler module is imported: no X-Ray daemon and no real AWS account in tests.
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "1")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "LiveKitFleetRemediation")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "tests")
os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_SECURITY_TOKEN", "testing")
os.environ.setdefault("AWS_SESSION_TOKEN", "testing")

from devkit.installed import InstalledEnvironment, built_wheels, install
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.core.observability import metrics
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext


@pytest.fixture(scope="session")
def livekit_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalLiveKit]:
    """A real livekit-server (dev mode, loopback, free port) shared by the whole session."""
    log_path = Path(tmp_path_factory.mktemp("livekit")) / "livekit-server.log"
    server = LocalLiveKit(log_path=log_path).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def wheels() -> dict[str, Path]:
    """`make dist`'s wheels by distribution name (built first when a source changed)."""
    return built_wheels()


@pytest.fixture(scope="session")
def remediation_installed(
    wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> InstalledEnvironment:
    """A fresh venv outside the repository with the remediation wheel, installed offline."""
    return install(tmp_path_factory.mktemp("remediation-venv") / "venv", wheels["livekit_fleet_remediation"])


@pytest.fixture(scope="session")
def agent_installed(
    wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> InstalledEnvironment:
    """A fresh venv with only the agent wheel and what it depends on (livekit-agents), as an agent image."""
    return install(tmp_path_factory.mktemp("agent-venv") / "venv", wheels["livekit_fleet_agent"])


@pytest.fixture(autouse=True)
def _metrics_of_this_test_only() -> Iterator[None]:
    """Powertools' Metrics is one object per process. A handler flushes it on every invocation, but a
    test that calls a service directly leaves its datapoints behind, and at 100 values of one metric
    Powertools prints them to stdout, into whichever later test reads stdout."""
    metrics.clear_metrics()
    yield
    metrics.clear_metrics()


@pytest.fixture
def lambda_context() -> LocalLambdaContext:
    return LocalLambdaContext()


# The fixtures that install the wheels into fresh virtual environments (minutes on two cores).
INSTALLED_WHEEL_FIXTURES = frozenset({"remediation_installed", "agent_installed"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`make test` runs pytest-xdist workers with ``--dist loadgroup``: each file is one group, so its
    module fixtures (a synthesized app, a built site) run once, and the files that use the installed
    wheels share one group, so the wheels are installed once, not once per worker."""
    installing = {
        item.path for item in items if INSTALLED_WHEEL_FIXTURES & set(getattr(item, "fixturenames", ()))
    }
    for item in items:
        group = "installed-wheels" if item.path in installing else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """The order's seed, also under -q (pytest-randomly prints it only in the header): a failure that
    depends on the order is replayed with the same ``--randomly-seed``."""
    seed = getattr(config.option, "randomly_seed", None)
    if isinstance(seed, int):
        terminalreporter.write_line(f"random test order: replay it with --randomly-seed={seed}")
