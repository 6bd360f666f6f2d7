# LiveKit Fleet Remediation — every target sets up what it needs and is safe to run twice.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
LIVEKIT_SERVER_VERSION := v1.13.5
LIVEKIT_SERVER := .tools/bin/livekit-server
# The Lambda runtime (cdk/fleet_stack/constructs/shared_layers.py) that the dependency layer targets.
LAMBDA_PYTHON := 3.14
DEPS_LAYER := build/layers/deps/python
ENV ?= staging

export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 1
export CDK_DISABLE_CLI_TELEMETRY := true
# Lambda puts functions/ and the layers on the path; locally the same four folders.
export PYTHONPATH := $(CURDIR)/functions:$(CURDIR)/layers/shared/python:$(CURDIR)/cdk:$(CURDIR)

.PHONY: help setup demo test lint typecheck unit integration infra faults mutation layers synth deploy bench clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(VENV)/.installed: requirements/dev.lock
	@echo "==> Python virtual environment ($(VENV)) from requirements/dev.lock"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PIP) install --quiet --upgrade pip
	@$(PIP) install --quiet -r requirements/dev.lock
	@touch $@

$(LIVEKIT_SERVER):
	@echo "==> livekit-server $(LIVEKIT_SERVER_VERSION) (go install)"
	@mkdir -p .tools/bin
	@GOBIN=$(CURDIR)/.tools/bin $(GO) install github.com/livekit/livekit-server/cmd/server@$(LIVEKIT_SERVER_VERSION)
	@mv .tools/bin/server $(LIVEKIT_SERVER)

node_modules/.bin/cdk: package.json package-lock.json
	@echo "==> AWS CDK CLI (npm ci)"
	@npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(DEPS_LAYER)/.built: requirements/runtime.lock $(VENV)/.installed
	@echo "==> dependency layer for Lambda python$(LAMBDA_PYTHON) (manylinux wheels, no Docker)"
	@rm -rf build/layers/deps && mkdir -p $(DEPS_LAYER)
	@# boto3 and its dependencies come with the Lambda runtime.
	@grep -vE '^(boto3|botocore|s3transfer|jmespath|urllib3|python-dateutil|six)==' requirements/runtime.lock \
		> build/layers/runtime-layer.txt
	@$(PIP) install --quiet --no-deps --only-binary=:all: --implementation cp \
		--python-version $(LAMBDA_PYTHON) --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
		--target $(DEPS_LAYER) -r build/layers/runtime-layer.txt
	@touch $@

layers: $(DEPS_LAYER)/.built ## Build the third-party dependency layer (no Docker)

setup: $(VENV)/.installed $(LIVEKIT_SERVER) node_modules/.bin/cdk layers ## Install everything (idempotent)

demo: setup ## Run the reaper against a local livekit-server and print its reports
	@$(PY) -m tools.demo

lint: setup ## ruff (lint and format) and mypy (strict on the runtime code)
	@$(VENV)/bin/ruff check .
	@$(VENV)/bin/ruff format --check .
	@$(VENV)/bin/mypy functions layers/shared/python tools cdk agent_cooperation bench devkit

test: setup lint ## Every test: unit, integration (real livekit-server, moto), infra (synth, cdk-nag, cfn-lint)
	@$(PY) -m pytest -p no:cacheprovider --durations=10

unit: setup
	@$(PY) -m pytest tests/unit -q

integration: setup
	@$(PY) -m pytest tests/integration -q

infra: setup
	@$(PY) -m pytest tests/infra -q

faults: setup ## Fault suite (part of make test) with its table: fault, function, time, outcome; then the tally
	@$(PY) -m pytest -p no:cacheprovider -p tests.faults.table tests/faults -q

mutation: setup ## Mutation check (mutmut) of the decision, executor and adapter modules: survivors and kill rate
	@PYTHONPATH= $(PY) -m devkit.mutation

synth: setup ## Synthesize one environment offline into cdk.out (ENV=staging)
	@$(PY) cdk/app.py $(ENV) cdk.out

deploy: setup ## Deploy one environment with the CDK CLI (ENV=staging; needs AWS credentials)
	@node_modules/.bin/cdk deploy -c env=$(ENV) --no-notices

bench: setup ## Benchmarks: reaper at 1k/10k rooms, cold imports, drainer tick, TTS analysis (prints figures)
	@$(PY) -m bench.reaper_scale
	@$(PY) -m bench.cold_imports
	@$(PY) -m bench.drainer_tick
	@$(PY) -m bench.tts_concentration

clean: ## Remove build output (keeps the venv and tools)
	rm -rf build cdk.out .demo
