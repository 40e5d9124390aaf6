# Common commands around CMake. `make demo` builds and runs the main job, `make test` builds
# and runs every test (GPU tests skip without a GPU). Variables: BUILD (build directory),
# CMAKE_FLAGS (e.g. -DFLASHC_CUDA=OFF), PREFIX (install prefix), JOBS.
BUILD ?= build
CMAKE_FLAGS ?=
PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all build configure test demo info install clean

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

demo: build
	$(BUILD)/tools/flashc demo

info: build
	$(BUILD)/tools/flashc info

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
