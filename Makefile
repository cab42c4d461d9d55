# `make test` and `make book` create .venv and install everything they need on first use.
PY      := .venv/bin/python
PROFILE ?= cpu
MODEL   ?=

.PHONY: test book install clean

$(PY):
	python3 -m venv .venv
	$(PY) -m pip install -q --upgrade pip
	# the CPU wheel first: an unpinned torch would pull a multi-GB CUDA build
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"

install: $(PY)

test: $(PY)
	$(PY) -m pytest -q

book: $(PY)
	.venv/bin/glauber-mlm book --profile $(PROFILE) $(if $(MODEL),--model $(MODEL))

clean:
	rm -rf _build
