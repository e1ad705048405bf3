# Convenience wrapper around CMake/CTest. Variables:
#   BUILD=dir  CUDA=AUTO|ON|OFF  SANITIZE=address,undefined  PREFIX=/usr/local
CUDA ?= AUTO
SANITIZE ?=
PREFIX ?= /usr/local
BUILD_TYPE ?= Release
ifeq ($(SANITIZE),)
BUILD ?= build
else
BUILD ?= build-sanitize
endif
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# The interpreter the Python extension is built for and tested with: Debian's
# /usr/bin/python3 holds python3-torchvision, the tests' reference.
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
SOURCES := $(shell find include src tools tests bench python ort -name '*.[ch]' -o -name '*.cu' -o -name '*.cuh' -o -name '*.inc' 2>/dev/null)

.PHONY: all deps dev-deps configure build run test test-torch2 test-ort-old bench install format lint clean gpu-check fuzz

all: build

deps:
	@./scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) -DVISIONOPS_CUDA=$(CUDA) -DVISIONOPS_SANITIZE=$(SANITIZE) \
	  -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCMAKE_INSTALL_PREFIX=$(PREFIX) \
	  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DPython3_EXECUTABLE=$(PYTHON)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Runs every op on realistic inputs on each available backend and writes
# $(BUILD)/nms.svg.
run: build
	$(BUILD)/visionops info
	$(BUILD)/visionops demo --out $(BUILD)

# The C suite, then (except in sanitized builds, whose instrumented library
# cannot load into Python) the Python suite on the package the build staged.
test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
ifeq ($(SANITIZE),)
	./scripts/test-python.sh $(BUILD) $(PYTHON)
endif

# The torch 2.x lane: the Python suite against the newest torch and
# torchvision from PyPI, with onnx and onnxruntime (opcheck, torch.export,
# ONNX, autocast, TorchScript, torch.func, DDP), in a cached venv outside the
# clone (scripts/test-torch2.sh; several GB the first time). The sample
# exporter of $(BUILD) feeds the generic tests (Meta kernels, opcheck,
# torchvision parity) every op's samples: the lane's installed package has
# no build tree beside it to find it in.
test-torch2: configure
	cmake --build $(BUILD) -j $(JOBS) --target vo_samples_export
	VISIONOPS_SAMPLES_EXPORT=$(CURDIR)/$(BUILD)/tests/vo_samples_export \
	  ./scripts/test-torch2.sh $(PYTHON)

# libvisionops_ort against an older ONNX Runtime (1.20) than the torch 2.x
# lane's, with Debian's torch, in a small cached venv (scripts/test-ort-old.sh).
test-ort-old: build
	./scripts/test-ort-old.sh $(BUILD) $(PYTHON)

# visionops and torchvision side by side (bench/compare_torchvision.py: same
# inputs, same process, medians at 1 thread and all threads, CUDA columns
# where there is a GPU): prints the tables, rewrites the generated block of
# bench/RESULTS.md and bench/ratios.svg. Where $(BENCH_PYTHON) lacks
# torch/torchvision it times visionops alone (bench/bench.c) and writes
# nothing. BENCH_ARGS: e.g. --quick, --filter roi_align, --out /tmp/r.md
# (--help lists them). First, roi_align's growth exponents on the CPU and
# OpenCL (bench/complexity.c, issue 14).
BENCH_PYTHON ?= /usr/bin/python3
BENCH_ARGS ?=
bench: configure
	cmake --build $(BUILD) -j $(JOBS) --target visionops visionops_bench visionops_complexity
	@echo "$(BUILD)/visionops_complexity   # roi_align's growth exponents per backend (issue 14)"
	@$(BUILD)/visionops_complexity
	@if $(BENCH_PYTHON) -c 'import torch, torchvision' 2>/dev/null; then \
	  echo "$(BENCH_PYTHON) bench/compare_torchvision.py $(BUILD)/libvisionops.so $(BENCH_ARGS)"; \
	  $(BENCH_PYTHON) bench/compare_torchvision.py $(BUILD)/libvisionops.so $(BENCH_ARGS); \
	else \
	  echo "bench: $(BENCH_PYTHON) cannot import torch and torchvision, so no comparison:"; \
	  echo "bench: timing visionops alone (bench/bench.c); bench/RESULTS.md is left as it is."; \
	  $(BUILD)/visionops_bench --markdown $(filter --quick --load,$(BENCH_ARGS)); \
	fi

install: build
	cmake --install $(BUILD)

# clang-format, clang-tidy, cppcheck and shellcheck (scripts/install-deps.sh --dev).
dev-deps:
	@./scripts/install-deps.sh --dev

format: dev-deps
	clang-format -i $(SOURCES)

# cppcheck's cross-file (ctu*) checks misread the macro-stamped per-dtype
# kernels (they report a NULL for an int thread index), so they are off;
# clang-tidy's analyzer covers the same ground.
lint: dev-deps configure
	clang-format --dry-run --Werror $(SOURCES)
	shellcheck scripts/*.sh
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
	  --suppress=ctunullpointer --suppress=ctuuninitvar --suppress=ctuArrayIndex \
	  --std=c11 --inline-suppr -I include -I src -DVISIONOPS_HAVE_OPENMP src tools
	run-clang-tidy -quiet -p $(BUILD) '$(CURDIR)/(src|tools|tests|python)/.*\.c$$' > $(BUILD)/clang-tidy.log 2>&1 \
	  || (cat $(BUILD)/clang-tidy.log; exit 1)

# On a machine with an NVIDIA GPU: a CUDA build for sm_90 in build-gpu, the C
# and Python suites and tests/python/gpu_compare.py (scripts/gpu-check.sh).
gpu-check:
	./scripts/gpu-check.sh

# libFuzzer over vo_infer / vo_call (tests/fuzz/fuzz_call.c) under ASan + UBSan,
# with clang, for FUZZ_SECONDS (default 300), from one seed call of every op,
# the past finds in tests/fuzz/regressions and the corpus kept in
# $(FUZZ_BUILD)/corpus; a crash leaves crash-* files in
# $(FUZZ_BUILD) and fails. FUZZ_ARGS: extra libFuzzer flags.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 300
FUZZ_ARGS ?=
FUZZ_PACKAGES := clang libclang-rt-dev libomp-dev
fuzz:
	@./scripts/install-deps.sh $(FUZZ_PACKAGES)
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DVISIONOPS_FUZZ=ON \
	  -DVISIONOPS_SANITIZE=address,undefined -DVISIONOPS_CUDA=OFF -DVISIONOPS_PYTHON=OFF \
	  -DVISIONOPS_BUILD_TOOLS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_call fuzz_seeds
	$(FUZZ_BUILD)/tests/fuzz/fuzz_seeds $(FUZZ_BUILD)/seeds
	mkdir -p $(FUZZ_BUILD)/corpus
	cd $(FUZZ_BUILD) && ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/fuzz/lsan.supp \
	  ./tests/fuzz/fuzz_call -max_total_time=$(FUZZ_SECONDS) -timeout=60 -rss_limit_mb=4096 \
	  -max_len=8192 -print_final_stats=1 $(FUZZ_ARGS) corpus seeds $(CURDIR)/tests/fuzz/regressions

clean:
	rm -rf build build-sanitize build-fuzz
