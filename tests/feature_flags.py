"""The CDK feature flags the tests synthesize under: the ones our cdk.json files pin, and the ones a
fresh `cdk init` writes today, read from the installed aws-cdk-lib (its jsii tarball carries
recommended-feature-flags.json, the file `cdk init` copies), so an upgrade re-checks the construct."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import aws_cdk

RECOMMENDED_FLAGS_MEMBER = "package/recommended-feature-flags.json"


def recommended_flags() -> dict[str, Any]:
    (tarball,) = (Path(aws_cdk.__file__).parent / "_jsii").glob("aws-cdk-lib@*.jsii.tgz")
    with tarfile.open(tarball) as archive:
        member = archive.extractfile(RECOMMENDED_FLAGS_MEMBER)
        assert member is not None, f"{tarball} has no {RECOMMENDED_FLAGS_MEMBER}"
        flags: dict[str, Any] = json.load(member)
    return flags
