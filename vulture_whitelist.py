"""Names vulture (make lint) cannot see used, each with who uses it. Never imported or run.

Framework conventions (pydantic validators, pytest hooks, http.server handlers) are ignored in
pyproject.toml's [tool.vulture]; what is here is one place each.
"""

from vulture.whitelist_utils import Whitelist

_ = Whitelist()

# __exit__(exc_type, exc, tb): the context-manager protocol names all three; devkit's servers use `exc` only.
_.exc_type
_.tb
# http.server reads these class and instance attributes (devkit/aws_endpoints.py's stand-in endpoint):
# handler threads that do not hold the process at exit, keep-alive, and closing a connection on purpose.
_.daemon_threads
_.protocol_version
_.close_connection
# The Lambda context's attribute that Powertools reads (devkit/lambda_context.py).
_.memory_limit_in_mb
# devkit/fakes/llm.py overrides livekit-agents' LLM.chat: the signature must keep every parameter.
_.parallel_tool_calls
_.tool_choice
_.extra_kwargs
# devkit/fakes/logs_insights.py answers StartQuery with boto3's keyword names.
_.logGroupName
# CDK's setter: assigning it writes the function's VpcConfig (src/livekit_fleet_remediation/constructs/worker_drainer.py).
_.vpc_config
# A cdk.json value (drainer.policy.capacity_mode = "service-replaces"): read from config, never named.
_.SERVICE_REPLACES
# cdk.json's drainer.vpc.vpc_id: the operator names the VPC the subnets belong to; the form is checked.
_.vpc_id
# ECS DescribeServices' runningCount beside desiredCount (functions/worker_drainer/adapters/ecs_model.py):
# nothing reads it; that adapter belongs to the drainer's capacity work, which reads or removes it.
_.running_count
# The action event's JSON field (contract/action_events.py): receivers read it, nothing here does.
_.schema_version
# Weekdays a cdk.json disruption window may name (contract/disruption_window.py): read from config.
_.SAT
_.SUN
# CDK's setter: assigning it attaches the custom actions to the Slack channel (constructs/notifications.py).
_.customization_resource_arns
# Python calls a module's __getattr__ for a missing name (the package's lazy exports, cdk/.../__init__.py).
_.__getattr__
# FleetRemediation's public attributes for a team's own app: the functions' and the agent services'
# own kill-switch names.
_.function_mode_parameter_names
_.service_mode_parameter_names
# The agent package's drill hook for a team's worker main process (docs/operations/drill.md runs it).
_.start_cpu_burner
# argparse reads a parser's formatter_class when it prints --help (cli/common.add_common sets it).
_.formatter_class
# The reaper's settings carry the environment's drill opt-in for lkfr drill --stack/--app, which reads
# it back from the deployed variable (cli/deployed_config.py); the reaper itself never reads it.
_.drills_enabled
# pytest-xdist's LoadScopeScheduling calls _split_scope for each node id (tests/conftest.py overrides it).
_._split_scope
# IAspect.visit: aws-cdk-lib calls it at synth for each construct below the aspect's scope
# (livekit_fleet_remediation/nag.py, under cdk-nag 3).
_.visit
