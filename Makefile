# The two commands of the README. Each creates .venv when missing and installs what it needs.
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
PIP     := $(VPY) -m pip

.PHONY: demo test test-all bench data clean mutation

$(VPY):
	$(PY) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(VENV)/.core: $(VPY) pyproject.toml
	$(PIP) install -q -e ".[bf16,io,scipy,data]"
	touch $@

$(VENV)/.test: $(VENV)/.core scripts/install_data.sh
	$(PIP) install -q -e ".[bf16,io,scipy,data,test]"
	bash scripts/install_data.sh $(VPY)
	touch $@

demo: $(VENV)/.core
	$(VPY) -m ember.demo

test: $(VENV)/.test
	# first the CUDA code paths on a NumPy-backed fake device (on a real GPU: `pytest -m cuda`), then all
	EMBER_FAKE_CUDA=1 $(VPY) -m pytest -m cuda
	$(VPY) -m pytest

test-all: $(VENV)/.test
	$(VPY) -m pytest -m ""

bench: $(VENV)/.test
	$(VPY) bench/run.py
	$(VPY) bench/w3_mlp.py
	$(VPY) bench/w5_gpt.py
	$(VPY) bench/w8_dataloader.py

clean:
	rm -rf $(VENV) build *.egg-info

# Mutation testing (docs/testing.md), slow and not in CI: `make mutation MODULE=optim`, or all six modules
# one after the other. Rerun a module's after changing it a lot.
MODULE ?= all
$(VENV)/.mutation: $(VENV)/.test
	$(PIP) install -q -e ".[mutation]"
	touch $@

mutation: $(VENV)/.mutation
	nice -n 19 $(VPY) scripts/mutation.py $(MODULE)
