# Common commands around CMake. `make demo` builds and runs the main job, `make test` builds
# and runs every test (GPU tests skip without a GPU), then the Python package's tests
# (`make test-python`: pytest on the library just built; skipped with a note when numpy or
# pytest is missing, an error instead with FLASHC_REQUIRE_PYTHON_TESTS=1). Variables: BUILD
# (build directory), CMAKE_FLAGS (e.g. -DFLASHC_CUDA=OFF), PREFIX (install prefix), JOBS, PYTHON.
BUILD ?= build
CMAKE_FLAGS ?=
PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PYTHON ?= python3

.PHONY: all build configure test test-python demo info install clean

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory test-python

test-python: build
	@if $(PYTHON) -c "import numpy, pytest" 2>/dev/null; then \
	  echo "pytest python/tests (libflashc from $(BUILD))"; \
	  FLASHC_LIBRARY=$(abspath $(BUILD))/libflashc.so $(PYTHON) -m pytest python/tests -q -p no:cacheprovider; \
	elif [ "$(FLASHC_REQUIRE_PYTHON_TESTS)" = 1 ]; then \
	  echo "test-python: numpy and pytest are required ($(PYTHON) -m pip install numpy pytest)"; exit 1; \
	else echo "test-python: skipped, $(PYTHON) lacks numpy or pytest ($(PYTHON) -m pip install numpy pytest)"; fi

demo: build
	$(BUILD)/tools/flashc demo

info: build
	$(BUILD)/tools/flashc info

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
