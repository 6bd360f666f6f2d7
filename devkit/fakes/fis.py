"""An explicit AWS FIS for the calls ``lkfr drill --via fis`` makes: moto 5.2.1 has experiment
templates' create and delete only (no listing, no experiments).

``FakeFis`` answers, on a real boto3 ``fis`` client (botocore ``before-call``, so botocore validates
the request against its model first and the ``after-call`` faults of ``devkit.fakes.aws_faults``,
``LostReply`` among them, still fire), ListExperimentTemplates, StartExperiment, ListExperiments,
GetExperiment, StopExperiment and ListExperimentResolvedTargets. Every answer is checked against
botocore's output shape (members, required members, lengths, patterns, enums) before it is returned,
so the fake cannot answer what FIS could not.

An experiment resolves its template's ``aws:ecs:task`` target with ``COUNT(1)`` among the running
tasks of the target's cluster and service (read from ``ecs``, moto), as FIS does at start. It starts
``initiating``, as StartExperiment answers: its first ``INITIATING_READS`` resolved-target reads
answer no target, then it is ``running`` with its target (an assumption: AWS publishes no figure for
how long an experiment initiates; a caller that takes the first read's answer fails here). It runs
until stopped (``stopping``, then ``stopped`` on the next read) or until ``finish`` ends it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from botocore.model import Shape, StructureShape

from devkit.service_models import _Check, operation

ACTIVE = ("pending", "initiating", "running", "stopping")
INITIATING_READS = 1


@dataclass
class Experiment:
    id: str
    template_id: str
    tags: dict[str, str]
    target: str | None
    status: str = "initiating"
    reason: str = "Experiment is initiating."
    initiating_reads: int = INITIATING_READS
    created: datetime = field(default_factory=lambda: datetime.now(UTC))


class FakeFis:
    def __init__(self, client: Any, ecs: Any, pick: Callable[[list[str]], str] = min) -> None:
        """``pick``: which of the service's running task ARNs ``COUNT(1)`` chooses."""
        self.ecs, self.pick = ecs, pick
        self.templates: dict[str, dict[str, Any]] = {}
        self.experiments: dict[str, Experiment] = {}
        self.calls: list[str] = []
        # (HTTP status, error code) StartExperiment answers without creating anything, when set.
        self.start_error: tuple[int, str] | None = None
        self._region = client.meta.region_name
        self._answers: dict[str, Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]] = {
            "ListExperimentTemplates": self._list_templates,
            "StartExperiment": self._start,
            "ListExperiments": self._list_experiments,
            "GetExperiment": self._get,
            "StopExperiment": self._stop,
            "ListExperimentResolvedTargets": self._resolved_targets,
        }
        self.serve(client)

    def serve(self, client: Any) -> None:
        """Answer ``client``'s FIS calls from this fake's state too."""
        client.meta.events.register_first("before-call.fis", self._call)

    def add_template(self, tags: dict[str, str], cluster: str, service: str) -> str:
        template_id = f"EXT{len(self.templates) + 1:010d}"
        self.templates[template_id] = {"tags": tags, "cluster": cluster, "service": service}
        return template_id

    def finish(self, experiment_id: str, status: str = "completed") -> None:
        self.experiments[experiment_id].status = status

    def _call(self, model: Any, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        name = model.name
        self.calls.append(name)
        handler = self._answers.get(name)
        if handler is None:
            raise NotImplementedError(f"FakeFis has no {name}")
        status, answer = handler(params)
        if status == 200:
            check_reply(name, answer)
        else:
            answer = {"Error": {"Code": answer["code"], "Message": answer["message"]}}
        answer["ResponseMetadata"] = {"HTTPStatusCode": status}
        return AWSResponse("https://fis.fake", status, HTTPHeaders(), None), answer

    def _arn(self, kind: str, ident: str) -> str:
        return f"arn:aws:fis:{self._region}:123456789012:{kind}/{ident}"

    def _list_templates(self, _: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        listed = [
            {"id": ident, "arn": self._arn("experiment-template", ident), "tags": t["tags"]}
            for ident, t in self.templates.items()
        ]
        return 200, {"experimentTemplates": listed}

    def _start(self, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.start_error is not None:
            status, code = self.start_error
            return status, {"code": code, "message": "the experiment was not created"}
        body = json.loads(params["body"] or b"{}")
        template = self.templates.get(body["experimentTemplateId"])
        if template is None:
            return 404, {"code": "ResourceNotFoundException", "message": "no such experiment template"}
        tasks = self.ecs.list_tasks(
            cluster=template["cluster"], serviceName=template["service"], desiredStatus="RUNNING"
        )["taskArns"]
        ident = f"EXP{len(self.experiments) + 1:010d}"
        experiment = Experiment(ident, body["experimentTemplateId"], body.get("tags", {}), None)
        if tasks:
            experiment.target = self.pick(tasks)
        else:
            experiment.status, experiment.reason = "failed", "Target resolution returned empty set"
        self.experiments[ident] = experiment
        return 200, {"experiment": self._experiment(experiment)}

    def _list_experiments(self, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        wanted = params["query_string"].get("experimentTemplateId")
        summaries = [
            {
                "id": e.id,
                "arn": self._arn("experiment", e.id),
                "experimentTemplateId": e.template_id,
                "state": {"status": e.status, "reason": e.reason},
                "creationTime": e.created,
                "tags": e.tags,
            }
            for e in self.experiments.values()
            if wanted in (None, e.template_id)
        ]
        return 200, {"experiments": summaries}

    def _found(self, params: dict[str, Any]) -> Experiment | None:
        ident = unquote(params["url_path"].split("/")[2])
        return self.experiments.get(ident)

    def _get(self, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        experiment = self._found(params)
        if experiment is None:
            return 404, {"code": "ResourceNotFoundException", "message": "no such experiment"}
        if experiment.status == "stopping":
            experiment.status, experiment.reason = "stopped", "Experiment stopped by user."
        return 200, {"experiment": self._experiment(experiment)}

    def _stop(self, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        experiment = self._found(params)
        if experiment is None:
            return 404, {"code": "ResourceNotFoundException", "message": "no such experiment"}
        if experiment.status not in ACTIVE:
            # FIS refuses to stop an experiment that has ended.
            return 400, {"code": "ValidationException", "message": f"experiment is {experiment.status}"}
        experiment.status, experiment.reason = "stopping", "Experiment is stopping."
        return 200, {"experiment": self._experiment(experiment)}

    def _resolved_targets(self, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        experiment = self._found(params)
        if experiment is None:
            return 404, {"code": "ResourceNotFoundException", "message": "no such experiment"}
        if experiment.status == "initiating" and experiment.initiating_reads > 0:
            experiment.initiating_reads -= 1
            if experiment.initiating_reads == 0:
                experiment.status, experiment.reason = "running", "Experiment is running."
            return 200, {"resolvedTargets": []}
        resolved = [
            {"resourceType": "aws:ecs:task", "targetName": "AgentTask", "targetInformation": {"arn": arn}}
            for arn in ([experiment.target] if experiment.target else [])
        ]
        return 200, {"resolvedTargets": resolved}

    def _experiment(self, experiment: Experiment) -> dict[str, Any]:
        return {
            "id": experiment.id,
            "arn": self._arn("experiment", experiment.id),
            "experimentTemplateId": experiment.template_id,
            "state": {"status": experiment.status, "reason": experiment.reason},
            "creationTime": experiment.created,
            "tags": experiment.tags,
        }


def check_reply(name: str, answer: dict[str, Any]) -> None:
    """The answer as FIS's model allows it: every member known, the required ones present, each
    value within its shape's limits."""
    shape = operation(f"fis:{name}").output_shape
    assert shape is not None, name
    check = _Check("reply", name, f"fis:{name}")
    check.value(answer, shape, name)
    missing = _missing_required(answer, shape, name)
    problems = [str(finding) for finding in check.findings] + missing
    if problems:
        raise AssertionError("FakeFis answered what FIS's model refuses: " + "; ".join(problems))


def _missing_required(value: Any, shape: Shape, path: str) -> list[str]:
    if not isinstance(shape, StructureShape) or not isinstance(value, dict):
        return []
    found = [f"{path}.{member} is required" for member in shape.required_members if member not in value]
    for member, item in value.items():
        if member in shape.members:
            found += _missing_required(item, shape.members[member], f"{path}.{member}")
    return found
