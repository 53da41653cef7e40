# Fresh machine: `make bench` (set up + run the host profile) and `make test` (set up + CPU test tier).
PYTHON ?= python3
VENV   ?= .venv
DEVICE ?= host
ARGS   ?=
BIN    := $(VENV)/bin
# extras the local environment gets. On a Jetson (/etc/nv_tegra_release) the venv also sees the system
# site-packages, so JetPack's TensorRT (python3-libnvinfer) and jtop are importable, and it gets no
# torch/x86 CUDA wheels (export ONNX on a host, or install NVIDIA's JetPack torch wheel system-wide).
ifneq ($(wildcard /etc/nv_tegra_release),)
EXTRAS     ?= ort,trt,progress,dev
VENV_FLAGS ?= --system-site-packages
else
EXTRAS     ?= export,ort,progress,dev
VENV_FLAGS ?=
endif

.PHONY: bench test test-deps remote setup lint doctor clean-runs
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV_FLAGS) $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[$(EXTRAS)]'
	touch $@

bench: setup
	$(BIN)/edgebench bench --device $(DEVICE) $(ARGS)

test: setup test-deps
	$(BIN)/ruff check edgebench tests benchmarks
	VENV=$(VENV) tools/typecheck_trt.sh
	$(BIN)/python -m pytest -q -rs $(ARGS)

# tests/remote/test_remote.py starts a real OpenSSH server on 127.0.0.1: install it (and rsync) when missing and
# root with apt-get (CI); otherwise those tests are skipped with the reason
test-deps:
	@if ! { command -v sshd || test -x /usr/sbin/sshd; } >/dev/null 2>&1 || ! command -v rsync >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "test-deps: installing openssh-server rsync (for tests/remote/test_remote.py)"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      openssh-server openssh-client rsync; } >/dev/null \
	      || echo "test-deps: apt-get failed; tests/remote/test_remote.py will be skipped"; \
	  else echo "test-deps: sshd or rsync missing and not root: tests/remote/test_remote.py will be skipped"; fi; \
	fi

# make remote HOST=user@board[,user@board2] DEVICE=orin ARGS="--models resnet50"  (see README "On boards")
remote: setup
	@test -n "$(HOST)" || { echo "make remote: set HOST=user@board[,user@board2,...]"; exit 2; }
	$(BIN)/edgebench remote --host $(HOST) --device $(DEVICE) -- $(ARGS)

lint: setup
	$(BIN)/ruff check edgebench tests benchmarks

doctor: setup
	$(BIN)/edgebench doctor
