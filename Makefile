# voicekit: `make demo` sets up and replays a real two-speaker recording; `make test` sets up and
# runs the tests. Python 3.11 and pip (the CPU torch 2.13.0 wheel on this disk is for CPython 3.11).
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.voicekit-installed
PYANNOTE_STAMP := $(VENV)/.voicekit-pyannote-installed

.PHONY: setup demo test eval clean

$(STAMP): pyproject.toml
	@echo "--- installing voicekit and its dependencies into $(VENV) (quietly; the first time takes a few minutes on 2 cores)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[test,realtime,postgres,multilingual]'
	$(PIP) install -q --no-deps resemblyzer==0.1.4
	touch $(STAMP)

# the optional pyannote.audio backend (never in the default install): the tests cover its plumbing
$(PYANNOTE_STAMP): $(STAMP) scripts/install_pyannote.sh
	sh scripts/install_pyannote.sh $(PY)
	touch $(PYANNOTE_STAMP)

setup: $(STAMP)

demo: setup
	$(PY) samples/fetch.py .samples
	$(VENV)/bin/voicekit replay .samples/sample.wav --out out/sample --refine --overwrite
	@echo "--- out/sample/sample.refined.txt: the same meeting re-clustered afterwards (--refine):"
	@cat out/sample/sample.refined.txt

# two pytest workers, one test file each at a time (--dist loadfile: a file's module fixtures, the
# virtual microphone and the PostgreSQL tests stay in one process): the paced microphone and LiveKit
# tests wait on the clock, so the other worker's CPU-bound tests run meanwhile (on 2 cores: 10.3
# min against 17.6 min in one process, 2026-12-07, on a quiet machine; 11-14 min in later runs)
test: setup $(PYANNOTE_STAMP)
	VOICEKIT_PG_DSN=$$(sh ../shared/tools/pg-test.sh start) VOICEKIT_REQUIRE_PG=1 VOICEKIT_REQUIRE_REALTIME=1 VOICEKIT_REQUIRE_PYANNOTE=1 $(PY) -m pytest -q -n 2 --dist loadfile

eval: setup
	$(PY) scripts/evaluate.py

clean:
	rm -rf $(VENV) out .samples
