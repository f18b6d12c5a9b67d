// Package emu is the CPU emulator backend of the device API: the course's kernels, compiled by
// the host C++ compiler (package emucc, this folder's compiler), run on the CPU with CUDA's
// semantics, so that students without a GPU and CI runners can check every lab's kernels. Its
// registration (rules.go) gives the engine this runtime, that compiler and the emulator's rules:
// what it cannot run (libraries, GPU-only and architecture-specific kernels, NVIDIA-only ones
// with 64-lane warps) and the flags its kernels are built with.
//
// The folder holds the Go side; the C++ runtime is its sibling emu/ at the course's root, next
// to labs/common, because every kernel file includes it (through kl.cuh), the student edition
// carries it, and a submission's hermetic build may read exactly those two folders (emucc's
// package doc says more).
//
// A kernel module is a shared object that holds the kernel file, a generated registry of its
// extern "C" entries and a link to the emulator's runtime (emu/kl_emu_rt.cc); this package only
// dlopens it (cgo with libdl, nothing else). Blocks run on worker threads, one worker per
// emulated SM, and the threads of a block are fibers on their worker; see emu/kl_emu.h for what
// kernel code can use.
//
// Devices are emulated in one process and share its memory: several of them (labs 04 and 05)
// reach each other's buffers through peer pointers, and their streams run concurrently. Memory is
// accounted per device. Every buffer has guard zones that are checked after each launch, so a
// kernel that writes past the end of a buffer fails with the buffer and the offset, and faults,
// barrier divergence, deadlocks and kernels that run past the time limit become errors.
//
// Its timings are those of a CPU running an emulation: they are not a performance figure.
//
// Settings, each with an environment variable and, where a caller needs one, a setter that takes
// precedence. The SMs and the memory are fixed when a device is opened, the time limit when a
// kernel is launched:
//
//	LABRUN_EMU_DEVICES     number of emulated devices (default 2)
//	LABRUN_EMU_SMS         SMs per device: blocks that run at once           SetSMs
//	                       (default: the number of CPUs, at least 2)
//	LABRUN_EMU_TIME_LIMIT  time limit of one launch, a Go duration (30s)     SetTimeLimit
//	LABRUN_EMU_MEMORY      memory of each device in bytes (4 GiB)
//	LABRUN_EMU_WARP        lanes of a warp: 32 (NVIDIA, the default) or 64   SetWarpSize
//	                       (AMD's wave64): kernels are built for it
//	                       (-DKL_EMU_WARP_SIZE), and a module built for
//	                       another width is refused
//	LABRUN_EMU_STACK_KIB   stack of each emulated thread in KiB (128)
//	LABRUN_EMU_NO_FAULT_HANDLER=1  let faults in kernel code crash the process instead of
//	                       becoming launch errors (for debuggers)
package emu

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// DeviceName is the name every emulated device reports.
const DeviceName = "Kernel Labs CPU emulator"

// Environment variables read by the backend.
const (
	EnvDevices   = "LABRUN_EMU_DEVICES"
	EnvSMs       = "LABRUN_EMU_SMS"
	EnvTimeLimit = "LABRUN_EMU_TIME_LIMIT"
	EnvMemory    = "LABRUN_EMU_MEMORY"
	EnvWarp      = "LABRUN_EMU_WARP"
	// EnvSchedule selects an adversarial schedule (see scheduleSetting).
	EnvSchedule = "LABRUN_EMU_SCHEDULE"
)

// Defaults.
const (
	DefaultDevices   = 2
	DefaultTimeLimit = 30 * time.Second
	DefaultMemory    = int64(4) << 30
)

var (
	cfgMu     sync.Mutex
	cfgSMs    int
	cfgLimit  time.Duration
	cfgWarp   int
	printfOut io.Writer = os.Stdout
)

// SetSMs sets how many blocks of a grid run at once on each device opened afterwards (0 restores
// the default). Two blocks that spin-wait for each other need at least 2.
func SetSMs(n int) {
	cfgMu.Lock()
	defer cfgMu.Unlock()
	cfgSMs = n
}

// SetTimeLimit sets the time limit of one launch (0 restores $LABRUN_EMU_TIME_LIMIT or 30 s).
// A kernel still running at the limit fails with EMU_TIMEOUT, a sticky error.
func SetTimeLimit(d time.Duration) {
	cfgMu.Lock()
	defer cfgMu.Unlock()
	cfgLimit = d
}

// SetWarpSize sets the lanes of a warp of each device opened afterwards: 32 or 64 (0 restores
// $LABRUN_EMU_WARP or 32). Kernels must be built for it (-DKL_EMU_WARP_SIZE=N: WarpBuildFlags).
func SetWarpSize(n int) {
	cfgMu.Lock()
	defer cfgMu.Unlock()
	cfgWarp = n
}

// WarpSize is the number of lanes of an emulated warp: 32 or 64.
func WarpSize() (int, error) {
	cfgMu.Lock()
	n := cfgWarp
	cfgMu.Unlock()
	from := "SetWarpSize"
	if n == 0 {
		v := os.Getenv(EnvWarp)
		if v == "" {
			return 32, nil
		}
		from = EnvWarp
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			return 0, fmt.Errorf("%s=%q: want 32 (NVIDIA's warps) or 64 (AMD's wave64)", EnvWarp, v)
		}
	}
	if n != 32 && n != 64 {
		return 0, fmt.Errorf("%s(%d): an emulated warp has 32 lanes (NVIDIA) or 64 (AMD's wave64)", from, n)
	}
	return n, nil
}

// WarpBuildFlags are the compiler flags that build a kernel for warps of the given width.
func WarpBuildFlags(warp int) []string {
	if warp == 0 || warp == 32 {
		return nil // KL_EMU_WARP_SIZE defaults to 32: the same builds, the same cache keys
	}
	return []string{fmt.Sprintf("-DKL_EMU_WARP_SIZE=%d", warp)}
}

// SetPrintfOutput sets where the output of printf in kernels goes (nil: os.Stdout). It is
// written when the launch that printed ends.
func SetPrintfOutput(w io.Writer) {
	cfgMu.Lock()
	defer cfgMu.Unlock()
	if w == nil {
		w = os.Stdout
	}
	printfOut = w
}

func envInt(name string, def int, min int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min {
		return 0, fmt.Errorf("%s=%q: want a whole number of at least %d", name, v, min)
	}
	return n, nil
}

// DeviceCount is the number of emulated devices.
func DeviceCount() (int, error) {
	return envInt(EnvDevices, DefaultDevices, 1)
}

// SMs is the number of blocks each emulated device runs at once.
func SMs() (int, error) {
	cfgMu.Lock()
	n := cfgSMs
	cfgMu.Unlock()
	if n > 0 {
		return n, nil
	}
	def := runtime.NumCPU()
	if def < 2 {
		def = 2
	}
	return envInt(EnvSMs, def, 1)
}

// TimeLimit is the time limit of one launch.
func TimeLimit() (time.Duration, error) {
	cfgMu.Lock()
	d := cfgLimit
	cfgMu.Unlock()
	if d > 0 {
		return d, nil
	}
	return gpu.DurationEnv(EnvTimeLimit, DefaultTimeLimit)
}

// DeviceMemory is the memory of each emulated device in bytes.
func DeviceMemory() (int64, error) {
	v := os.Getenv(EnvMemory)
	if v == "" {
		return DefaultMemory, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a number of bytes", EnvMemory, v)
	}
	return n, nil
}

func printfWriter() io.Writer {
	cfgMu.Lock()
	defer cfgMu.Unlock()
	return printfOut
}

// scheduleSetting is how the emulator orders the work of a launch ($LABRUN_EMU_SCHEDULE; the
// plain order by default). "adversarial:SEED" runs blocks in a shuffled order, delays some of
// them at their start, resumes the threads of a block in a shuffled order at every switch, and
// makes threads yield at fences and atomics: code that is right only because of the plain order
// (a missing wait, a missing barrier after one, a wrong count) fails under it.
func scheduleSetting() string { return os.Getenv(EnvSchedule) }
