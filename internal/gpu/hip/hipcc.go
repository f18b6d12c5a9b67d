// Package hip is the folder of the AMD backend, which is next (internal/gpu's package doc says
// what it adds). Today it holds the backend's compiler only: the HIP compile check of labrun
// hip-check, which builds every portable kernel of the course for AMD GPUs. The runtime, its
// rules (gfx target names, rocBLAS and RCCL for the needs cublas and nccl) and one
// backends.Register call join it here.
package hip

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// The HIP compile check (labrun hip-check): every portable kernel of the course compiled for AMD
// GPUs, on a machine without one. Nothing is run; the check proves that kl.cuh's layer is enough
// for a kernel to build with AMD's compilers, and names the file and line where it is not.
//
// Debian 12 ships ROCm 5.2: hipcc (clang 15) with libamdhip64-dev and rocm-device-libs builds
// complete device code objects for gfx90a (MI200). Its device libraries stop before gfx942
// (MI300X), so for gfx942 clang 19 compiles the device code to ISA assembly without them
// (-nogpulib): everything the kernel itself holds is compiled, calls into the device libraries
// (ocml's expf and friends) are left unresolved.

// Target is one AMD GPU architecture of the check and the compiler that builds for it.
type Target struct {
	Arch     string   // gfx90a
	GPU      string   // the GPU family, for messages: MI200
	Compiler string   // the command: hipcc, clang-19
	Args     []string // flags before the include folders and the source
	Output   string   // the suffix of the output file
	Packages []string // Debian packages that provide the compiler
}

// Targets are the targets of labrun hip-check. gfx90a is built as it would run (-O3, linked
// with the device libraries); gfx942 at -O0, which still selects every instruction (what the
// check is for: builtins, intrinsics, shared-memory limits) in a tenth of the time: lab 02's
// double-buffering file, 21 instantiations of a large unrolled kernel, takes 100 s at -O3.
var Targets = []Target{
	{Arch: "gfx90a", GPU: "MI200", Compiler: "hipcc",
		Args:     []string{"--offload-arch=gfx90a", "--cuda-device-only", "-O3", "-std=c++17", "-c"},
		Output:   ".hsaco",
		Packages: []string{"hipcc", "libamdhip64-dev", "rocm-device-libs"}},
	{Arch: "gfx942", GPU: "MI300X", Compiler: "clang-19",
		Args:     []string{"-x", "hip", "--offload-arch=gfx942", "--cuda-device-only", "-nogpulib", "-O0", "-std=c++17", "-S"},
		Output:   ".s",
		Packages: []string{"clang-19", "lld-19"}},
}

// TargetByArch finds a target of the check.
func TargetByArch(arch string) (Target, error) {
	var names []string
	for _, t := range Targets {
		if t.Arch == arch {
			return t, nil
		}
		names = append(names, t.Arch)
	}
	return Target{}, fmt.Errorf("no HIP target %q (known: %s)", arch, strings.Join(names, ", "))
}

// Find says where the target's compiler is, or which packages to install.
func (t Target) Find() (string, error) {
	p, err := exec.LookPath(t.Compiler)
	if err != nil {
		return "", fmt.Errorf("%s for %s (%s) not found: install %s (make hip-check does, as root)",
			t.Compiler, t.Arch, t.GPU, strings.Join(t.Packages, " "))
	}
	return p, nil
}

// Request is one kernel file to compile for one target.
type Request struct {
	Source      string   // the kernel file
	IncludeDirs []string // -I folders (labs/common, the lab's folder); the source's folder is -iquote
	Flags       []string // the variants' extra flags (-DKL_TIMELINE)
	OutDir      string   // where the output goes (a temporary folder)
}

// Compile compiles one kernel file for the target's device code. A failure is a
// *toolchain.CompileError whose diagnostics carry file:line.
func Compile(ctx context.Context, t Target, r Request) error {
	cc, err := t.Find()
	if err != nil {
		return err
	}
	base := strings.TrimSuffix(filepath.Base(r.Source), filepath.Ext(r.Source))
	flagTag := ""
	if len(r.Flags) > 0 {
		k, err := toolchain.Key(r.Flags, nil)
		if err != nil {
			return err
		}
		flagTag = "-" + k[:8]
	}
	out := filepath.Join(r.OutDir, fmt.Sprintf("%s%s-%s%s", base, flagTag, t.Arch, t.Output))
	args := append([]string{}, t.Args...)
	args = append(args, r.Flags...)
	args = append(args, "-iquote", filepath.Dir(r.Source))
	for _, d := range r.IncludeDirs {
		args = append(args, "-I", d)
	}
	args = append(args, r.Source, "-o", out)
	cmd := exec.CommandContext(ctx, cc, args...)
	// hipcc asks rocm_agent_enumerator for the local GPUs when no target is given; with
	// --offload-arch it does not, but keep it from probing a machine that has none.
	cmd.Env = append(os.Environ(), "HIP_PLATFORM=amd")
	b, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &toolchain.CompileError{Source: r.Source, Command: cc + " " + strings.Join(args, " "),
			Diagnostics: toolchain.ParseDiagnostics(string(b)), Output: string(b)}
	}
	if _, err := os.Stat(out); err != nil {
		return fmt.Errorf("%s for %s wrote no %s: %s", t.Compiler, t.Arch, out, strings.TrimSpace(string(b)))
	}
	return nil
}
