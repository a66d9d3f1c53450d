# The two commands of the README: `make run` (the main job) and `make test` (the whole CTest suite).
# Both install the Debian packages that are missing, configure CMake (Release) into build/, and build.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
RUN_PROFILE ?= quick
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?=
FUZZ_DIR ?= build-fuzz
CMAKE_FLAGS ?=

.PHONY: all deps configure build test test-asan run clean fuzz

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) > $(BUILD_DIR).configure.log 2>&1 \
	  || { cat $(BUILD_DIR).configure.log; echo "make: CMake configure failed" >&2; exit 1; }
	@grep -E "^-- spartan:" $(BUILD_DIR).configure.log || true

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 1500

# The whole suite again under ASan + UBSan (separate tree build-asan, -O1, no CUDA).
test-asan: deps
	@bash scripts/test-asan.sh

run: build
	@bash scripts/run-main-job.sh $(RUN_PROFILE)

# libFuzzer targets (clang, ASan+UBSan; docs/reliability.md): build into $(FUZZ_DIR), run each FUZZ_SECONDS
# (or until FUZZ_RUNS executions, when set: `make fuzz FUZZ_SECONDS=3600 FUZZ_RUNS=1000000`).
fuzz: deps
	@CC=clang CXX=clang++ cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPARTAN_FUZZ=ON \
	  -DSPARTAN_ENABLE_CUDA=OFF -DSPARTAN_BUILD_BENCHMARKS=OFF \
	  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
	  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" > $(FUZZ_DIR).configure.log 2>&1 \
	  || { cat $(FUZZ_DIR).configure.log; echo "make: fuzz configure failed" >&2; exit 1; }
	@cmake --build $(FUZZ_DIR) --target fuzz_all -j $(JOBS)
	@FUZZ_RUNS=$(FUZZ_RUNS) bash scripts/run-fuzz.sh $(FUZZ_DIR) $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD_DIR) $(BUILD_DIR).configure.log $(FUZZ_DIR) $(FUZZ_DIR).configure.log
