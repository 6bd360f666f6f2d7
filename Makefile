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
# The Lambda runtime's Python (RUNTIME_PYTHON in src/livekit_fleet_remediation/constructs/shared_layers.py):
# the dependency layer's wheels are built for it and every module that ships is compiled by it.
LAMBDA_PYTHON := 3.13
BYTECODE_TAG := cpython-$(subst .,,$(LAMBDA_PYTHON))
# The CPython $(LAMBDA_PYTHON) that compiles it: the first that runs of python$(LAMBDA_PYTHON) on PATH (a
# pyenv shim runs only if its version is selected) and pyenv's installed ones.
IS_BUILD_PYTHON := -c 'import sys; sys.exit(sys.implementation.name != "cpython" or \
	"%d.%d" % sys.version_info[:2] != "$(LAMBDA_PYTHON)")'
ifeq ($(origin LAMBDA_BUILD_PYTHON),undefined)
LAMBDA_BUILD_PYTHON := $(shell for python in $$(command -v python$(LAMBDA_PYTHON)) \
	$(HOME)/.pyenv/versions/$(LAMBDA_PYTHON).*/bin/python$(LAMBDA_PYTHON); do \
	"$$python" $(IS_BUILD_PYTHON) 2>/dev/null && { echo "$$python"; break; }; done)
endif
# The dependency layer, built for each processor a function may run on (lambda_architecture in each
# environment, default arm64): build/layers/deps-<arch>/python.
LAMBDA_ARCHITECTURES := arm64 x86_64
DEPS_LAYERS := $(foreach arch,$(LAMBDA_ARCHITECTURES),build/layers/deps-$(arch)/python/.built)
# The Lambda runtime provides these (boto3 and its dependencies): never in the dependency layer.
RUNTIME_PROVIDED := boto3|botocore|s3transfer|jmespath|urllib3|python-dateutil|six
# `make lambda-smoke`: AWS's Runtime Interface Emulator, and a local runtime (a Python with only boto3
# and awslambdaric) plus the dependency layer rebuilt for that Python: this machine's, unless
# LAMBDA_LOCAL_PYTHON names another interpreter (e.g. a newer one, closer to Lambda's).
LAMBDA_RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
LAMBDA_RIE := .tools/bin/aws-lambda-rie
LAMBDA_LOCAL_PYTHON ?= $(PY)
LOCAL_LAMBDA := build/lambda-local
LOCAL_RUNTIME := $(LOCAL_LAMBDA)/runtime
LOCAL_DEPS_LAYER := $(LOCAL_LAMBDA)/deps/python
# synth, diff, deploy and plan act on one environment (ENV) of your configuration file (CONFIG; the
# default, environments.json, is git-ignored: yours). Nothing defaults to an example environment.
CONFIG ?= environments.json
FUNCTION ?= reaper
# `make test`'s pytest-xdist workers: many tests wait on servers and subprocesses, so more workers
# than cores (2 in CI) still shorten the run (TEST_WORKERS=0 runs in one process).
TEST_WORKERS ?= 3

export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 1
export CDK_DISABLE_CLI_TELEMETRY := true
# Lambda puts functions/ and the layers on the path; locally the same four folders.
export PYTHONPATH := $(CURDIR)/agent:$(CURDIR)/functions:$(CURDIR)/layers/shared/python:$(CURDIR)/src:$(CURDIR)

.PHONY: help setup setup-deploy chromium wheelhouse wheelhouse-ranges dist demo drill test lint typecheck unit integration infra faults mutation layers lambda-runtime lambda-smoke synth diff deploy plan docs bench clean FORCE

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

# Every target that ships bytecode checks first that the interpreter compiling it is CPython $(LAMBDA_PYTHON).
need-build-python = @test -n "$(LAMBDA_BUILD_PYTHON)" && "$(LAMBDA_BUILD_PYTHON)" $(IS_BUILD_PYTHON) 2>/dev/null || { \
	echo "make: the functions run on Lambda's python$(LAMBDA_PYTHON) and ship bytecode compiled by CPython \
$(LAMBDA_PYTHON), but $(if $(LAMBDA_BUILD_PYTHON),LAMBDA_BUILD_PYTHON=$(LAMBDA_BUILD_PYTHON) is not one,none runs \
here (python$(LAMBDA_PYTHON) on PATH or $(HOME)/.pyenv/versions/$(LAMBDA_PYTHON).*)): install CPython $(LAMBDA_PYTHON) \
(apt-get install python$(LAMBDA_PYTHON), pyenv install $(LAMBDA_PYTHON) or uv python install $(LAMBDA_PYTHON)), \
or name it: make $(or $(MAKECMDGOALS),layers) LAMBDA_BUILD_PYTHON=/path/to/python$(LAMBDA_PYTHON)" >&2; exit 2; }
# compileall over folder $(1), which Lambda puts at $(2), with invalidation mode $(3), with python $(4).
# Hash-based, not timestamps: Lambda's copy keeps no build-time mtime. File names are Lambda's, so
# the same sources compile to the same bytes on any machine and the assets' hashes stay put.
compile-bytecode = $(4) -m compileall -q -f -j 0 --invalidation-mode $(3) -s $(1) -p $(2) $(1) >/dev/null

# Rewritten only when the runtime's Python or the interpreter that compiles for it changes.
build/layers/python.txt: FORCE
	@mkdir -p $(dir $@)
	@echo '$(LAMBDA_PYTHON) $(LAMBDA_BUILD_PYTHON)' | cmp -s - $@ || echo '$(LAMBDA_PYTHON) $(LAMBDA_BUILD_PYTHON)' > $@

# One pattern for both: the architecture's manylinux wheels (aarch64 for arm64), compiled unchecked:
# nothing edits a built layer, make rebuilds it whole.
build/layers/deps-%/python/.built: requirements/runtime.lock $(VENV)/.installed build/layers/python.txt
	$(need-build-python)
	@echo "==> dependency layer for Lambda python$(LAMBDA_PYTHON) on $* (manylinux wheels, no Docker)"
	@rm -rf build/layers/deps-$* && mkdir -p build/layers/deps-$*/python
	@# boto3 and its dependencies come with the Lambda runtime.
	@grep -vE '^($(RUNTIME_PROVIDED))==' requirements/runtime.lock > build/layers/runtime-layer-$*.txt
	@$(PIP) install --quiet --no-deps --only-binary=:all: --no-compile --implementation cp \
		--python-version $(LAMBDA_PYTHON) \
		--platform manylinux_2_28_$(if $(filter x86_64,$*),x86_64,aarch64) \
		--platform manylinux2014_$(if $(filter x86_64,$*),x86_64,aarch64) \
		--target build/layers/deps-$*/python -r build/layers/runtime-layer-$*.txt
	@$(call compile-bytecode,build/layers/deps-$*/python,/opt/python,unchecked-hash,$(LAMBDA_BUILD_PYTHON))
	@touch $@

# The functions' code and the shared layer, compiled in place (their __pycache__ beside the sources)
# and checked against their source when imported, so an edit is never run from stale bytecode. A
# deleted module's bytecode goes first: it would ship.
LAMBDA_SOURCES := $(shell find functions layers/shared/python -name '*.py' -not -path '*/__pycache__/*' 2>/dev/null)
LAMBDA_BYTECODE := build/layers/bytecode.built
$(LAMBDA_BYTECODE): $(LAMBDA_SOURCES) build/layers/python.txt
	$(need-build-python)
	@echo "==> bytecode of the functions and the shared layer for Lambda python$(LAMBDA_PYTHON)"
	@find functions layers/shared/python -name '*.$(BYTECODE_TAG).pyc' -delete
	@$(call compile-bytecode,functions,/var/task,checked-hash,$(LAMBDA_BUILD_PYTHON))
	@$(call compile-bytecode,layers/shared/python,/opt/python,checked-hash,$(LAMBDA_BUILD_PYTHON))
	@touch $@

layers: $(DEPS_LAYERS) $(LAMBDA_BYTECODE) ## Build the third-party dependency layer for arm64 and for x86_64 (no Docker), and compile every module that ships for Lambda's Python

# The package tests install into fresh virtual environments offline (pip --no-index) from here.
WHEELHOUSE := build/wheelhouse
$(WHEELHOUSE)/.filled: requirements/wheelhouse.lock $(VENV)/.installed
	@echo "==> wheelhouse for the package tests (requirements/wheelhouse.lock)"
	@rm -rf $(WHEELHOUSE) && mkdir -p $(WHEELHOUSE)
	@$(PIP) download --quiet --no-deps --only-binary=:all: -r requirements/wheelhouse.lock -d $(WHEELHOUSE)
	@touch $@

# Each end of the dependency ranges in pyproject.toml, for tests/packaging/test_dependency_ranges.py.
RANGE_WHEELHOUSES := build/wheelhouse-lowest/.filled build/wheelhouse-highest/.filled
build/wheelhouse-%/.filled: requirements/wheelhouse-%.lock $(VENV)/.installed
	@echo "==> wheelhouse for the $* end of the dependency ranges (requirements/wheelhouse-$*.lock)"
	@rm -rf build/wheelhouse-$* && mkdir -p build/wheelhouse-$*
	@$(PIP) download --quiet --no-deps --only-binary=:all: -r requirements/wheelhouse-$*.lock -d build/wheelhouse-$*
	@touch $@

# The agent package at livekit-agents' lowest end, for tests/packaging/test_agent_range.py: only what
# differs from the dev environment, laid over it on PYTHONPATH.
AGENTS_LOWEST := build/agents-lowest/.built
$(AGENTS_LOWEST): requirements/agents-lowest.lock $(VENV)/.installed
	@echo "==> livekit-agents' lowest end over the dev environment (requirements/agents-lowest.lock)"
	@rm -rf build/agents-lowest && mkdir -p build/agents-lowest
	@$(PIP) install --quiet --no-deps --only-binary=:all: --no-compile --target build/agents-lowest \
		-r requirements/agents-lowest.lock
	@touch $@

wheelhouse-ranges: $(RANGE_WHEELHOUSES) $(AGENTS_LOWEST) ## Fill build/wheelhouse-lowest and -highest and build/agents-lowest (the dependency ranges' ends)

wheelhouse: $(WHEELHOUSE)/.filled $(RANGE_WHEELHOUSES) $(AGENTS_LOWEST)

# The wheels carry the Lambda code and both layers as deployed (build/dist-assets, staged here), so a
# consumer's synth needs no network and no build step.
DIST_ASSETS := build/dist-assets
DIST_SOURCES := pyproject.toml hatch_build.py README.md LICENSE agent/pyproject.toml agent/README.md \
	tests/fixtures/incident-2026-09-15.jsonl examples/standalone/environments.json \
	$(shell find src/livekit_fleet_remediation layers/shared functions agent/livekit_fleet_agent -type f \
		-not -path '*/__pycache__/*' -not -name '*.pyc' 2>/dev/null)
FUNCTION_DIRS := $(patsubst %/handler.py,%,$(wildcard functions/*/handler.py))

dist/.built: $(DIST_SOURCES) $(DEPS_LAYERS) $(LAMBDA_BYTECODE) $(VENV)/.installed
	@echo "==> wheels and sdists into dist/ (hatchling, offline)"
	@rm -rf $(DIST_ASSETS) dist && mkdir -p $(DIST_ASSETS)/functions $(DIST_ASSETS)/layers/shared
	@cp -R $(FUNCTION_DIRS) $(DIST_ASSETS)/functions/
	@cp -R layers/shared/python $(DIST_ASSETS)/layers/shared/
	@cp -R $(foreach arch,$(LAMBDA_ARCHITECTURES),build/layers/deps-$(arch)) $(DIST_ASSETS)/layers/
	@# What synth ships (ASSET_EXCLUDES): the runtime's bytecode, no other Python's, no stamps.
	@find $(DIST_ASSETS) \( -name '*.pyc' -not -name '*.$(BYTECODE_TAG).pyc' -o -name .built \) -delete
	@find $(DIST_ASSETS) -type d -name __pycache__ -empty -delete
	@$(PY) -m build --no-isolation --sdist --wheel --outdir dist . >build/dist.log 2>&1 || { cat build/dist.log; exit 1; }
	@$(PY) -m build --no-isolation --sdist --wheel --outdir dist agent >>build/dist.log 2>&1 || { cat build/dist.log; exit 1; }
	@ls dist
	@touch $@

dist: dist/.built ## Build the wheels and sdists (remediation package with its Lambda assets; agent package) into dist/

$(LAMBDA_RIE):
	@echo "==> aws-lambda-rie $(LAMBDA_RIE_VERSION) (go install)"
	@mkdir -p $(dir $@)
	@GOBIN=$(abspath $(dir $@)) $(GO) install \
		github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(LAMBDA_RIE_VERSION)

# Rewritten only when LAMBDA_LOCAL_PYTHON changes, so the two builds below follow it.
$(LOCAL_LAMBDA)/python.txt: FORCE
	@mkdir -p $(LOCAL_LAMBDA)
	@echo '$(LAMBDA_LOCAL_PYTHON)' | cmp -s - $@ || echo '$(LAMBDA_LOCAL_PYTHON)' > $@

$(LOCAL_DEPS_LAYER)/.built: requirements/runtime.lock $(VENV)/.installed $(LOCAL_LAMBDA)/python.txt
	@echo "==> dependency layer for $(LAMBDA_LOCAL_PYTHON) (the smoke test's stand-in for the python$(LAMBDA_PYTHON) one)"
	@rm -rf $(LOCAL_LAMBDA)/deps && mkdir -p $(LOCAL_DEPS_LAYER)
	@grep -vE '^($(RUNTIME_PROVIDED))==' requirements/runtime.lock > $(LOCAL_LAMBDA)/deps-layer.txt
	@$(PIP) --python $(LAMBDA_LOCAL_PYTHON) install --quiet --no-deps --only-binary=:all: --no-compile \
		--target $(LOCAL_DEPS_LAYER) -r $(LOCAL_LAMBDA)/deps-layer.txt
	@# Compiled as the deployed layer is, by its own Python.
	@$(call compile-bytecode,$(LOCAL_DEPS_LAYER),/opt/python,unchecked-hash,$(LAMBDA_LOCAL_PYTHON))
	@touch $@

$(LOCAL_RUNTIME)/.built: requirements/runtime.lock requirements/dev.lock $(VENV)/.installed $(LOCAL_LAMBDA)/python.txt
	@echo "==> local Lambda runtime: $(LAMBDA_LOCAL_PYTHON) with only boto3 (runtime.lock) and awslambdaric"
	@rm -rf $(LOCAL_RUNTIME) && $(LAMBDA_LOCAL_PYTHON) -m venv --without-pip $(LOCAL_RUNTIME)
	@grep -E '^($(RUNTIME_PROVIDED))==' requirements/runtime.lock > $(LOCAL_LAMBDA)/runtime-included.txt
	@grep -E '^(awslambdaric|simplejson|snapshot-restore-py)==' requirements/dev.lock >> $(LOCAL_LAMBDA)/runtime-included.txt
	@$(PIP) --python $(LOCAL_RUNTIME)/bin/python install --quiet --no-deps --only-binary=:all: \
		-r $(LOCAL_LAMBDA)/runtime-included.txt
	@touch $@

lambda-runtime: $(LAMBDA_RIE) $(LOCAL_DEPS_LAYER)/.built $(LOCAL_RUNTIME)/.built

# The incident page's test drives Debian's chromium headless; installed once, when missing.
chromium:
	@command -v chromium >/dev/null 2>&1 || { echo "==> chromium (apt-get)"; \
		$(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y -qq chromium >/dev/null 2>&1 || \
		{ $(if $(filter 0,$(shell id -u)),,sudo) apt-get update -qq && \
		  $(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y -qq chromium >/dev/null; }; }

# What synth and deploy need: Python, the CDK CLI and the dependency layer (no Go, no livekit-server).
setup-deploy: $(VENV)/.installed node_modules/.bin/cdk layers

setup: setup-deploy $(LIVEKIT_SERVER) lambda-runtime chromium wheelhouse ## Install everything (idempotent)

demo: setup ## The story: reaper on livekit-server, replay of the incident, drainer with a real agents worker
	@$(PY) -m tools.demo

drill: setup ## The seed's failures on a real local fleet (8 agents workers on livekit-server): each fault with the functions off and with them acting on the fleet: timelines, sessions lost in each (DRILL_ARGS="--fault tts-silence --json"); about 19 min on 2 cores
	@$(PY) -m tools.drill $(DRILL_ARGS)

lint: setup ## ruff (lint, format, complexity), mypy (strict on the runtime code), import layers, dead code, sizes
	@$(VENV)/bin/ruff check .
	@$(VENV)/bin/ruff format --check .
	@$(VENV)/bin/mypy functions layers/shared/python tools src cdk agent bench devkit
	@$(VENV)/bin/lint-imports --no-cache --no-logo
	@$(VENV)/bin/vulture
	@$(PY) -m devkit.code_shape --check --top 0

test: setup lint dist ## Every test: unit, integration (real livekit-server, moto), infra (synth, cdk-nag, cfn-lint), the docs site built strict
	@$(VENV)/bin/twine check --strict dist/*.whl dist/*.tar.gz
	@$(PY) -m pytest -p no:cacheprovider --durations=10 -n $(TEST_WORKERS) --dist loadfile

unit: setup
	@$(PY) -m pytest tests/unit -q

integration: setup
	@$(PY) -m pytest tests/integration -q

infra: setup
	@$(PY) -m pytest tests/infra -q

faults: setup ## Fault suite (part of make test) with its table: fault, function, time, outcome; then the tally
	@$(PY) -m pytest -p no:cacheprovider -p tests.faults.table tests/faults -q

mutation: setup ## Mutation check (mutmut) of every runtime module: survivors and kill rate per module (MUTATION_ARGS="--module NAME", --shard I/N, --list, --survivors, --diffs, --report-only)
	@PYTHONPATH= $(PY) -m devkit.mutation $(MUTATION_ARGS)

lambda-smoke: setup ## The synthesized functions under AWS's Lambda Runtime Interface Emulator (prints a table)
	@$(PY) -m pytest tests/lambda_smoke -q -p no:cacheprovider

# A target that acts on one environment fails early without ENV, saying what to pass.
need-env = @test -n "$(ENV)" || { echo "make $@: name the environment: make $@ ENV=<name> [CONFIG=<file>] \
(CONFIG defaults to environments.json; examples/standalone/environments.json shows the shape)" >&2; exit 2; }

synth: setup-deploy ## Synthesize one environment offline into cdk.out (ENV=<name> [CONFIG=environments.json]); no Go needed
	$(need-env)
	@LKFR_CONFIG=$(CONFIG) $(PY) cdk/app.py $(ENV) cdk.out

diff: setup-deploy ## What a deploy would change in one environment's stack: cdk diff (ENV=<name> [CONFIG=...]; needs AWS credentials)
	$(need-env)
	@node_modules/.bin/cdk diff LiveKitFleetRemediation-$(ENV) -c config=$(CONFIG) --no-notices

deploy: setup-deploy ## Deploy one environment's stack with the CDK CLI (ENV=<name> [CONFIG=...]; needs AWS credentials)
	$(need-env)
	@node_modules/.bin/cdk deploy LiveKitFleetRemediation-$(ENV) -c config=$(CONFIG) --no-notices

docs: $(VENV)/.installed ## Build the docs site into build/site (MkDocs, strict: a warning fails; make test builds it too)
	@$(PY) -m mkdocs build --strict --site-dir build/site

plan: $(VENV)/.installed ## Dry-run plan against the live LiveKit/AWS (FUNCTION=reaper|drainer ENV=<name> [CONFIG=...])
	$(need-env)
	@$(PY) -m livekit_fleet_remediation.cli plan $(FUNCTION) --env $(ENV) --config $(CONFIG)

# The reaper benchmark keeps fleets above 20,000 rooms in livekit-server's Redis room store.
REDIS_SERVER := /usr/bin/redis-server
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

$(REDIS_SERVER):
	@echo "==> redis-server (Debian package, for the reaper benchmark's large fleets)"
	@$(SUDO) apt-get install -y -qq redis-server >/dev/null 2>&1 || \
		($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq redis-server >/dev/null)

bench: setup lambda-runtime $(REDIS_SERVER) ## Benchmarks: reaper at 10k/100k rooms beside a naive script and through 20 ms latency, cold imports, cold start under the Lambda emulator, drainer tick, kill-switch lag, TTS analysis, detection, cost
	@$(PY) -m bench.reaper_scale --rooms 10000 --rooms 100000 --latency
	@$(PY) -m bench.cold_imports
	@$(PY) -m bench.lambda_cold_start
	@$(PY) -m bench.drainer_tick
	@$(PY) -m bench.kill_switch_lag
	@$(PY) -m bench.tts_concentration
	@$(PY) -m bench.detection $(if $(QUICK),--quick)
	@$(PY) -m bench.cost --tasks 50 --responses-per-minute 2000
	@$(PY) -m bench.cost --tasks 300 --responses-per-minute 12000
	@$(PY) -m bench.cost --tasks 1000 --responses-per-minute 40000

clean: ## Remove build output (keeps the venv and tools)
	rm -rf build cdk.out .demo dist
