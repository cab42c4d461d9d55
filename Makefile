# `make test` and `make book` create .venv and install everything they need on first use.
PY      := .venv/bin/python
PROFILE ?= cpu
MODEL   ?=
FORCE   ?=
DTYPE   ?=

.PHONY: test test-slow book verify install clean

$(PY):
	python3 -m venv .venv
	$(PY) -m pip install -q --upgrade pip
	# the CPU wheel first: an unpinned torch would pull a multi-GB CUDA build
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	# the Jupyter kernel papermill runs the notebooks in: this environment's python, named python3
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (glauber-mlm)"

install: $(PY)

test: $(PY)
	$(PY) -m pytest -q -n auto --dist loadgroup

# the tests marked slow, which `make test` leaves out (pyproject.toml: -m "not slow"); CI runs them after it.
# pytest's status 5 says no test was selected: not a failure here
test-slow: $(PY)
	$(PY) -m pytest -q -n auto --dist loadgroup -m slow || [ $$? -eq 5 ]

# executes notebooks/*.py with papermill into book/notebooks/ (only those whose code, parameters, data or models
# changed; FORCE=1: all; DTYPE=float32|bfloat16: in that dtype), then jupyter-book build -W (see README); a PROFILE
# other than cpu or a MODEL builds in _build/runs/PROFILE-MODEL/ instead, unless PUBLISH=1
book: $(PY)
	.venv/bin/glauber-mlm book --profile $(PROFILE) $(if $(MODEL),--model $(MODEL)) $(if $(FORCE),--force) $(if $(DTYPE),--dtype $(DTYPE)) $(if $(PUBLISH),--publish)

# re-executes every published notebook in a scratch folder and compares its tables with the committed ones
verify: $(PY)
	.venv/bin/glauber-mlm verify

clean:
	rm -rf _build
