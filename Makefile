# Kernel Labs — the two commands a student needs:
#   make run LAB=01    run one lab (on the GPU if there is one, else on the CPU emulator)
#   make test          run every test (no GPU needed)

GO      ?= go
# go-nvml wraps NVML calls that CUDA 13 deprecates; keep the build quiet about them.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
BIN     := bin/labrun
LAB     ?= 01
ARGS    ?=

.PHONY: all setup build test run site grade clean gpu-binaries hip-check

all: build

## setup: install what labrun needs here (Debian packages for the emulator, Go modules)
setup:
	@bash scripts/setup.sh

COMMIT  := $(shell git describe --always --dirty 2>/dev/null)

## build: compile bin/labrun (labrun --version names the commit)
build:
	$(GO) build -ldflags "-X main.buildCommit=$(COMMIT)" -o $(BIN) ./cmd/labrun

## test: vet and test everything; GPU tests skip with a message when there is no GPU
test: setup
	$(GO) vet ./...
	$(GO) test -count=1 ./...

## run: run one lab, e.g. make run LAB=02 ARGS="--quick"
run: setup build
	./$(BIN) run $(strip $(LAB) $(ARGS))

## site: render the course site into site/public/
site: build
	./$(BIN) site$(if $(strip $(ARGS)), $(strip $(ARGS)))

## grade: grade the exercise files of a lab
grade: build
	./$(BIN) grade $(strip $(LAB) $(ARGS))

## hip-check: compile every portable kernel for AMD GPUs (gfx90a, gfx942); installs the compilers
hip-check: build
	@bash scripts/setup-hip.sh
	./$(BIN) hip-check$(if $(strip $(ARGS)), $(strip $(ARGS)))

## gpu-binaries: labrun and the GPU test binaries in bin/, to carry to a GPU machine without Go
gpu-binaries: build
	$(GO) test -c -o bin/cuda.test ./internal/gpu/cuda
	echo internal/gpu/cuda > bin/cuda.pkg
	$(GO) test -c -o bin/nvml.test ./internal/gpu/nvml
	echo internal/gpu/nvml > bin/nvml.pkg
	git describe --always --dirty > bin/commit 2>/dev/null || true

## clean: remove build outputs and the compiled-kernel cache
clean:
	rm -rf bin site/public
	rm -rf "$${LABRUN_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/kernellabs}"
