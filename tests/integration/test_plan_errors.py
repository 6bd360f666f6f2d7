"""``lkfr plan`` errors that say what to fix, each with its exact message: no AWS credentials,
invalid or expired ones, valid ones without the permission, a missing secret (botocore's own
credential chain, a botocore Stubber, and moto); a LiveKit key whose secret does not match the
real livekit-server's; ``ws://``/``wss://`` LIVEKIT_URLs; a bad LIVEKIT_URL named as the
environment variable it came from; and no link to a report the plan never logged."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.parameters import SecretsProvider
from botocore.stub import Stubber
from moto import mock_aws

from devkit.livekit_local import LocalLiveKit
from fleet_remediation.adapters import livekit_rooms
from livekit_fleet_remediation.cli import plan
from tests.example_environments import example_context

pytestmark = pytest.mark.livekit
SECRET = "ppi/livekit/staging/api-credentials"
REGION = "eu-west-1"
CREDENTIAL_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SECURITY_TOKEN",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
)


def write_config(tmp_path: Path, livekit: LocalLiveKit) -> Path:
    context = copy.deepcopy(example_context())
    context["environments"]["staging"].update(
        {
            "region": REGION,
            "account": "123456789012",
            "livekit_url": livekit.http_url,
            "livekit_secret_name": SECRET,
        }
    )
    path = tmp_path / "cdk.json"
    path.write_text(json.dumps({"context": context}))
    return path


@pytest.fixture
def no_aws_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore's whole credential chain finds nothing: no variables, files or instance metadata,
    and no boto3 default session that cached another test's credentials. Should a call still be
    made, it goes to a closed loopback port, never to AWS."""
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def secret_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan reads the LiveKit key from Secrets Manager (no LIVEKIT_API_KEY/SECRET)."""
    for name in ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET"):
        monkeypatch.delenv(name, raising=False)


def run_plan(
    tmp_path: Path, livekit: LocalLiveKit, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    code = plan.main(["reaper", "--env", "staging", "--config", str(write_config(tmp_path, livekit))])
    out, err = capsys.readouterr()
    return code, out, err


def stubbed_secrets(monkeypatch: pytest.MonkeyPatch, code: str, message: str) -> Iterator[None]:
    client = boto3.client("secretsmanager", region_name=REGION)
    stubber = Stubber(client)
    stubber.add_client_error("get_secret_value", service_error_code=code, service_message=message)
    monkeypatch.setattr(livekit_rooms, "secrets_provider", lambda: SecretsProvider(boto3_client=client))
    with stubber:
        yield
    stubber.assert_no_pending_responses()


@pytest.mark.usefixtures("secret_path", "no_aws_credentials")
def test_no_aws_credentials_says_how_to_sign_in(
    livekit_server: LocalLiveKit,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run_plan(tmp_path, livekit_server, capsys)
    assert code == 1
    assert err.splitlines()[-1] == (
        f"plan failed: SecretError: cannot read LiveKit credentials from {SECRET}: no AWS credentials "
        "found: sign in (aws sso login --profile NAME, then export AWS_PROFILE=NAME) or set "
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, then run again"
    )


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (
            "UnrecognizedClientException",
            "AWS rejected the credentials as invalid or expired (UnrecognizedClientException): refresh "
            "them (aws sso login, or new access keys / session token) and run again",
        ),
        (
            "ExpiredTokenException",
            "AWS rejected the credentials as invalid or expired (ExpiredTokenException): refresh them "
            "(aws sso login, or new access keys / session token) and run again",
        ),
        (
            "AccessDeniedException",
            f"the AWS credentials are valid but not allowed to call GetSecretValue on {SECRET} "
            "(AccessDeniedException): use a role that allows it, or ask for that permission",
        ),
    ],
)
@pytest.mark.usefixtures("secret_path")
def test_credentials_aws_refuses_say_which_problem_and_the_fix(
    livekit_server: LocalLiveKit,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    code: str,
    expected: str,
) -> None:
    for _ in stubbed_secrets(monkeypatch, code, "refused"):
        exit_code, _, err = run_plan(tmp_path, livekit_server, capsys)
    assert exit_code == 1
    assert err.splitlines()[-1] == (
        f"plan failed: SecretError: cannot read LiveKit credentials from {SECRET}: {expected}"
    )


@pytest.mark.usefixtures("secret_path")
def test_a_missing_secret_says_so_and_where_it_is_named(
    livekit_server: LocalLiveKit, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with mock_aws():
        code, _, err = run_plan(tmp_path, livekit_server, capsys)
    assert code == 1
    assert err.splitlines()[-1] == (
        f"plan failed: SecretError: cannot read LiveKit credentials from {SECRET}: secret {SECRET} does not "
        f'exist in {REGION}: create it with {{"api_key": "...", "api_secret": "..."}}, or correct '
        f"livekit_secret_name in {tmp_path / 'cdk.json'}"
    )


def test_a_wrong_livekit_secret_says_the_key_or_secret_does_not_match(
    livekit_server: LocalLiveKit,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LIVEKIT_URL", livekit_server.http_url)
    monkeypatch.setenv("LIVEKIT_API_KEY", livekit_server.api_key)
    monkeypatch.setenv("LIVEKIT_API_SECRET", "not-the-servers-secret-but-long-enough-for-hs256")
    with mock_aws():
        code, _, err = run_plan(tmp_path, livekit_server, capsys)
    assert code == 1
    assert err.splitlines()[-1] == (
        "plan failed: LiveKitApiError: LiveKit ListRooms failed: HTTP 401: the LiveKit server refused "
        "the API key: the key or secret does not match the server's keys; check both against the "
        "server's configuration (the key and secret came from LIVEKIT_API_KEY and LIVEKIT_API_SECRET "
        "(environment variables))"
    )


@pytest.mark.parametrize("scheme", ["ws", "http"])
def test_livekits_ws_urls_are_accepted_and_no_link_points_to_an_unlogged_report(
    livekit_server: LocalLiveKit,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    scheme: str,
) -> None:
    monkeypatch.setenv("LIVEKIT_URL", livekit_server.http_url.replace("http", scheme, 1))
    monkeypatch.setenv("LIVEKIT_API_KEY", livekit_server.api_key)
    monkeypatch.setenv("LIVEKIT_API_SECRET", livekit_server.api_secret)
    with mock_aws():
        code, out, err = run_plan(tmp_path, livekit_server, capsys)
    assert code == 0, err
    assert "status=ok" in out.splitlines()[0]
    assert "This run's report" not in out
    assert "logs-insights" not in out


def test_a_bad_livekit_url_is_named_by_the_variable_it_came_from(
    livekit_server: LocalLiveKit,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LIVEKIT_URL", "ftp://livekit.example.com")
    code, _, err = run_plan(tmp_path, livekit_server, capsys)
    assert code == 1
    assert err.splitlines()[-1] == (
        "plan failed: ConfigurationError: LIVEKIT_URL (environment variable) 'ftp://livekit.example.com' "
        "is not a LiveKit URL: use wss://HOST, ws://HOST:7880, https://HOST or http://HOST:7880, or unset "
        "it to use the configuration's livekit_url"
    )


def test_the_aws_hint_unwraps_powertools_get_parameter_error() -> None:
    from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
    from botocore.exceptions import ClientError

    from fleet_remediation.core.error_hints import secret_hint

    def wrapped() -> Any:
        try:
            raise ClientError({"Error": {"Code": "ResourceNotFoundException"}}, "GetSecretValue")
        except ClientError as exc:
            raise GetParameterError(str(exc))  # noqa: B904 as Powertools does: the cause only as __context__

    with pytest.raises(GetParameterError) as raised:
        wrapped()
    assert secret_hint(raised.value, secret_id="s", region="r") == (
        'secret s does not exist in r: create it with {"api_key": "...", "api_secret": "..."}, or correct '
        "livekit_secret_name in the environment's configuration"
    )


@pytest.mark.usefixtures("no_aws_credentials")
def test_the_drainer_plan_without_credentials_says_so_not_that_the_stack_is_missing(
    livekit_server: LocalLiveKit, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, livekit_server)
    assert plan.main(["drainer", "--env", "staging", "--config", str(config)]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "plan failed: ConfigurationError: cannot read lkfr-staging-agents-worker-drainer's configuration: "
        "no AWS "
        "credentials found: sign in (aws sso login --profile NAME, then export AWS_PROFILE=NAME) or set "
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, then run again"
    )
