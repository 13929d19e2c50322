# The two commands of the README. Each creates .venv when missing and installs what it needs.
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
PIP     := $(VPY) -m pip
# every pip call (here, in scripts/, in the build backend's isolated env) installs the pinned versions
export PIP_CONSTRAINT := $(abspath constraints.txt)

.PHONY: demo test test-all coverage bench data clean lock mutation

$(VPY):
	$(PY) -m venv $(VENV)

$(VENV)/.core: $(VPY) pyproject.toml constraints.txt
	@echo "== installing Ember and what the demo uses into $(VENV) (the first time: a minute or two)"
	$(PIP) install -q --upgrade pip setuptools
	$(PIP) install --progress-bar on -e ".[bf16,scipy,data,plot,tensorboard,jit]"
	@echo "== installed"
	touch $@

$(VENV)/.test: $(VENV)/.core scripts/install_data.sh
	$(PIP) install -q -e ".[bf16,scipy,data,test]"
	bash scripts/install_data.sh $(VPY)
	touch $@

demo: $(VENV)/.core
	$(VPY) -m ember.demo

# The suites built on check_op (tests/helpers.py), run with Ember's side on the cuda device
CHECK_OP_SUITES := tests/ops tests/nn tests/optim tests/autograd tests/test_tensor.py \
	tests/test_tensor_methods.py tests/test_hardening.py tests/test_dtype.py tests/test_random.py tests/backends \
	tests/distributions

# 1: the cuda device is the strict fake one (ember/backends/fake_cuda.py); `make test FAKE_CUDA=0` on a
# machine with CuPy and a GPU runs the same passes on the GPU
FAKE_CUDA ?= 1

test: $(VENV)/.test
	# first the CUDA code paths: the cuda-marked tests, then every check_op suite with Ember on 'cuda'; then all
	EMBER_FAKE_CUDA=$(FAKE_CUDA) $(VPY) -m pytest -m cuda
	EMBER_FAKE_CUDA=$(FAKE_CUDA) $(VPY) -m pytest --check-op-device=cuda $(CHECK_OP_SUITES)
	$(VPY) -m pytest

test-all: $(VENV)/.test
	$(VPY) -m pytest -m ""

# The suite under coverage.py (branch coverage, DataLoader workers included), with the run-time check that
# every public name of Ember ran (tests/api_coverage.py); then the per-file table (see docs/testing.md).
coverage: $(VENV)/.test
	$(VPY) -m coverage erase
	EMBER_FAKE_CUDA=$(FAKE_CUDA) $(VPY) -m coverage run -m pytest -m cuda
	EMBER_FAKE_CUDA=$(FAKE_CUDA) $(VPY) -m coverage run -m pytest --check-op-device=cuda $(CHECK_OP_SUITES)
	$(VPY) -m coverage run -m pytest --api-coverage; status=$$?; \
	$(VPY) -m coverage combine -q && $(VPY) -m coverage report; exit $$status

bench: $(VENV)/.test
	$(VPY) bench/run.py
	$(VPY) bench/w3_mlp.py
	$(VPY) bench/w5_gpt.py
	$(VPY) bench/w8_dataloader.py

# refresh constraints.txt from what the registries serve today (then run make test and commit both)
lock:
	bash scripts/lock.sh $(PY)

clean:
	rm -rf $(VENV) build *.egg-info

# Mutation testing (docs/testing.md), slow and not in CI: `make mutation MODULE=optim`, or all ten modules
# one after the other. Rerun a module's after changing it a lot.
MODULE ?= all
$(VENV)/.mutation: $(VENV)/.test
	$(PIP) install -q -e ".[mutation]"
	touch $@

mutation: $(VENV)/.mutation
	nice -n 19 $(VPY) scripts/mutation.py $(MODULE)
