// Package backends is the one registration of a backend: what the engine and the CLI ask of it.
// A backend's folder (internal/gpu/cuda, internal/gpu/emu, later internal/gpu/hip) holds its
// runtime (a gpu.Backend), its compiler (command lines, flags, target names) and its rules (which
// of lab.yaml's needs it satisfies, what target a variant builds for, what `labrun doctor`
// checks), and registers them together from init with Register. The engine (internal/lab) and
// `labrun doctor` look a backend up by name and never name one themselves.
//
// Adding a backend is adding its folder, one Register call in it, and one import in
// cmd/labrun/imports.go.
package backends

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// Registration is everything one backend provides.
type Registration struct {
	Name     string     // the --backend name: "cuda", "emu"
	Title    string     // what labrun doctor calls it: "NVIDIA GPU (--backend cuda)"
	Open     gpu.Opener // its runtime
	Compiler Compiler   // what builds its kernels
	Rules    Rules      // what it can run, and for which target
	// Doctor lists what labrun doctor checks for the backend, and whether it can run labs here.
	Doctor func() (checks []Check, usable bool)
	// Instead, when set, says how to use this backend when another one cannot open ("without a
	// GPU, run on the CPU emulator: --backend emu").
	Instead string
}

// Compiler builds kernel files for one backend.
type Compiler interface {
	// Family names the compiler in results files and the cache: "nvcc", "c++".
	Family() string
	// Build compiles one kernel file for r.Arch (a target name of the backend's Rules).
	Build(ctx context.Context, r toolchain.Request) (toolchain.Artifact, error)
	// Version is the compiler's version string, recorded with results.
	Version() (string, error)
}

// Requirements are what lab.yaml says a variant (or a helper kernel) needs, and what the run has.
type Requirements struct {
	Needs   []string // lab.yaml's needs: nvidia, gpu, cublas, nccl, sm_90a, sm_80, ...
	EmuSkip string   // lab.yaml's emu_skip: why the CPU emulator cannot run it ("" when it can)
	// Devices is how many devices the lab uses at once (0 when the lab does not say); Available
	// is how many the run has from its first device, First (0 when unknown).
	Devices, Available, First int
}

// Rules say what a backend can run on one of its devices.
type Rules interface {
	// SkipReason says why a variant with req cannot run on dev, in one sentence that says what
	// to do, or "" when it can. Needs the backend does not know are not its concern ("").
	SkipReason(dev gpu.DeviceInfo, req Requirements) string
	// Target is the compile target of a kernel with these needs on dev ("sm_90", "sm_90a").
	Target(dev gpu.DeviceInfo, needs []string) string
	// BuildFlags are compiler flags every kernel built for dev gets (the emulator's warp width),
	// so that the modules match the device.
	BuildFlags(dev gpu.DeviceInfo) []string
}

// Check is one line of labrun doctor: something a backend needs, and whether it is here.
type Check struct {
	Name   string // "nvcc", "C++ compiler (emulator)"
	Found  bool
	Detail string // what was found, or why not
	Fix    string // how to install it when missing
}

var (
	mu     sync.Mutex
	byName = map[string]Registration{}
)

// Register makes a backend known by its name, and its runtime available to gpu.Open. Backends
// call it from init.
func Register(r Registration) {
	if r.Name == "" || r.Open == nil || r.Compiler == nil || r.Rules == nil {
		panic(fmt.Sprintf("backends.Register(%q): a registration needs a name, an opener, a compiler and rules", r.Name))
	}
	mu.Lock()
	byName[r.Name] = r
	mu.Unlock()
	gpu.Register(r.Name, r.Open)
}

// Lookup finds a registered backend by name.
func Lookup(name string) (Registration, error) {
	mu.Lock()
	defer mu.Unlock()
	r, ok := byName[name]
	if !ok {
		return Registration{}, fmt.Errorf("backend %q is not registered (its folder registers it from init; "+
			"cmd/labrun/imports.go imports it)", name)
	}
	return r, nil
}

// All lists the registered backends by name.
func All() []Registration {
	mu.Lock()
	defer mu.Unlock()
	out := make([]Registration, 0, len(byName))
	for _, r := range byName {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Instead is the advice a run whose backend (name) did not open gets, in one line: how to use
// the backends that say how to be used instead ("" when none does). err's own text may already
// give it, naming the other backend's --backend flag: then the advice is "".
func Instead(name string, err error) string {
	var out []string
	for _, r := range All() {
		if r.Name == name || r.Instead == "" || (err != nil && strings.Contains(err.Error(), "--backend "+r.Name)) {
			continue
		}
		out = append(out, r.Instead)
	}
	return strings.Join(out, "; ")
}

// TooFewDevices is the rule every backend shares: a lab that uses more devices at once than the
// run has is skipped. hint says how to get more on this backend ("" when nothing helps).
func TooFewDevices(dev gpu.DeviceInfo, req Requirements, hint string) string {
	if req.Available <= 0 || req.Devices <= req.Available {
		return ""
	}
	why := fmt.Sprintf("needs %d devices at once; the %s backend has %d from device %d", req.Devices, dev.Backend, req.Available, req.First)
	if hint != "" {
		why += " (" + hint + ")"
	}
	return why
}
