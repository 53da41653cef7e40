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
EXTRAS     ?= ort,trt,progress,search,dev
VENV_FLAGS ?= --system-site-packages
else
EXTRAS     ?= export,ort,progress,search,dev
VENV_FLAGS ?=
endif

# EXTRAS, HOST, DEVICE and ARGS may come from another machine (`edgebench remote`, the Ansible role run
# `make setup EXTRAS=...` on a board): they reach the recipes as environment variables, expanded by the shell
# inside double quotes, never pasted into recipe text, and make never expands them ($(value ...)). EXTRAS must be
# extras names; ARGS is split on blanks, without quotes, globs or any other shell syntax.
override EXTRAS := $(value EXTRAS)
override HOST   := $(value HOST)
override DEVICE := $(value DEVICE)
override ARGS   := $(value ARGS)
export EXTRAS HOST DEVICE ARGS

.PHONY: bench test test-deps remote setup lint doctor clean-runs
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@case "$$EXTRAS" in ''|,*|*,|*,,*|*[!A-Za-z0-9_.,-]*) \
	  printf 'make setup: EXTRAS=%s is not a comma-separated list of extras names (letters, digits, _ . -)\n' \
	    "$$EXTRAS" | LC_ALL=C tr -d '\000-\010\013-\037\177' >&2; exit 2;; esac
	$(PYTHON) -m venv $(VENV_FLAGS) $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[$$EXTRAS]"
	touch $@

bench: setup
	set -f; $(BIN)/edgebench bench --device "$$DEVICE" $$ARGS

test: setup test-deps
	$(BIN)/ruff check edgebench tests benchmarks
	VENV=$(VENV) tools/typecheck.sh
	set -f; $(BIN)/python -m pytest -q -rs $$ARGS

# tests/remote/test_remote.py starts a real OpenSSH server on 127.0.0.1: install it (and rsync) when missing and
# root with apt-get (CI); tests/report/test_summary_browser.py renders summary.html in Debian's chromium, installed
# the same way; otherwise those tests are skipped with the reason
test-deps:
	@if ! { command -v sshd || test -x /usr/sbin/sshd; } >/dev/null 2>&1 || ! command -v rsync >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "test-deps: installing openssh-server rsync (for tests/remote/test_remote.py)"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      openssh-server openssh-client rsync; } >/dev/null \
	      || echo "test-deps: apt-get failed; tests/remote/test_remote.py will be skipped"; \
	  else echo "test-deps: sshd or rsync missing and not root: tests/remote/test_remote.py will be skipped"; fi; \
	fi
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "test-deps: installing chromium (for tests/report/test_summary_browser.py)"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      chromium; } >/dev/null \
	      || echo "test-deps: apt-get failed; tests/report/test_summary_browser.py will be skipped"; \
	  else echo "test-deps: chromium missing and not root: tests/report/test_summary_browser.py will be skipped"; fi; \
	fi

# make remote HOST=user@board[,user@board2] DEVICE=orin ARGS="--models resnet50"  (see docs/guides/remote.md)
remote: setup
	@test -n "$$HOST" || { echo "make remote: set HOST=user@board[,user@board2,...]"; exit 2; }
	set -f; $(BIN)/edgebench remote --host "$$HOST" --device "$$DEVICE" -- $$ARGS

lint: setup
	$(BIN)/ruff check edgebench tests benchmarks

doctor: setup
	$(BIN)/edgebench doctor
