// Package emucc is the CPU emulator's compiler: the host C++ compiler's command lines, the
// registry generator that finds a kernel file's entries, and the build of the emulator's C++
// runtime. A kernel file becomes a shared object that holds the kernels, a generated registry of
// its extern "C" entries (names, parameter types and sizes) and a link to the runtime,
// libklemu-<hash>.so, built once from the course's emu/ folder into the same cache folder. The
// Go backend (internal/gpu/emu) dlopens the kernel object; nothing of the emulator is compiled
// into the labrun binary except a few lines of dlopen glue.
//
// The C++ runtime stays at the course's root, in emu/ beside labs/, rather than under this
// package: its headers are part of what every kernel file includes (labs/common/kl.cuh takes
// the CUDA surface from emu/kl_emu.h, the device-code check from emu/kl_device_check.h), the
// student edition carries it as the course's own C++ layer, and a submission's hermetic build
// reads exactly labs/common and emu/. It is this package's sibling, found by Dir.
//
// The package needs no cgo, so the grader and tests can build kernels without the runtime
// backend.
package emucc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// genVersion changes whenever the registry generator or the build's shape changes.
const genVersion = "emu-build-4"

// Family names the compiler in results files ("c++").
const Family = "c++"

// CXXFlags are the C++ flags of every emulator build: C++17, optimized (the emulator's speed
// is the kernel's speed), no strict aliasing, since CUDA code reinterprets float* as float4*, and
// no assumption that loops end: C++ lets g++ delete a spin on a plain (non-volatile) load as a
// loop without side effects, where nvcc keeps it and hoists the load, so the kernel hangs on a
// GPU; with -fno-finite-loops it hangs on the emulator too, and the time limit reports it.
var CXXFlags = []string{"-std=c++17", "-O2", "-fno-finite-loops", "-fPIC", "-pthread", "-fno-strict-aliasing",
	"-fdiagnostics-color=never", "-fmax-errors=20"}

// Packages are the Debian packages the emulator's builds need.
var Packages = []string{"g++", "libboost-context-dev"}

// Compiler is the host C++ compiler: $CXX, else c++, else g++, else clang++.
func Compiler() (string, error) {
	if c := os.Getenv("CXX"); c != "" {
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
		return "", fmt.Errorf("$CXX=%s not found", c)
	}
	for _, c := range []string{"c++", "g++", "clang++"} {
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no C++ compiler found (the CPU emulator needs one): install g++ (apt-get install g++), or set CXX")
}

var (
	checkMu  sync.Mutex
	checkErr = map[string]error{}
)

// Check says whether kernels can be built for the emulator here: a C++ compiler that finds
// Boost.Context's headers. The error names the packages to install. The result is cached.
func Check() error {
	cxx, err := Compiler()
	if err != nil {
		return err
	}
	checkMu.Lock()
	defer checkMu.Unlock()
	if err, ok := checkErr[cxx]; ok {
		return err
	}
	cmd := exec.Command(cxx, "-std=c++17", "-E", "-x", "c++", "-o", os.DevNull, "-")
	cmd.Stdin = strings.NewReader("#include <boost/context/detail/fcontext.hpp>\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		err = fmt.Errorf("the CPU emulator needs Boost.Context, which %s cannot find: install it with "+
			"`apt-get install %s` (%s)", filepath.Base(cxx), strings.Join(Packages, " "), firstLine(string(out)))
	}
	checkErr[cxx] = err
	return err
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Dir finds the emulator's C++ runtime (kl_emu.h, kl_emu_rt.cc): $LABRUN_EMU_DIR, one of dirs,
// or an emu/ folder beside one of dirs or their parents (labs/common -> ../../emu).
func Dir(dirs []string) (string, error) {
	ok := func(d string) bool {
		_, e1 := os.Stat(filepath.Join(d, "kl_emu.h"))
		_, e2 := os.Stat(filepath.Join(d, "kl_emu_rt.cc"))
		return e1 == nil && e2 == nil
	}
	if d := os.Getenv("LABRUN_EMU_DIR"); d != "" {
		if ok(d) {
			return d, nil
		}
		return "", fmt.Errorf("LABRUN_EMU_DIR=%s holds no kl_emu.h and kl_emu_rt.cc", d)
	}
	for _, d := range dirs {
		if ok(d) {
			return d, nil
		}
	}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			continue
		}
		for p := abs; ; p = filepath.Dir(p) {
			if ok(filepath.Join(p, "emu")) {
				return filepath.Join(p, "emu"), nil
			}
			if filepath.Dir(p) == p {
				break
			}
		}
	}
	return "", fmt.Errorf("the emulator's sources (emu/kl_emu.h, emu/kl_emu_rt.cc) were not found from %v", dirs)
}

var buildLocks sync.Map // output path -> *sync.Mutex: one build of a thing at a time in a process

func lock(path string) func() {
	m, _ := buildLocks.LoadOrStore(path, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// Build compiles one kernel file for the CPU emulator into a shared object in the emu folder of
// toolchain.CacheDir (the backend's Compiler). r.Arch is not used: the host compiler builds for
// the host. A build is reused while its key (the source's content and path, the include
// folders, the flags, `c++ --version`) is the same and no file the compiler read has changed
// (toolchain's dependency cache). Compile errors come back as a *toolchain.CompileError that
// lists file:line messages. A submission (r.Submission) is built hermetically.
func Build(ctx context.Context, r toolchain.Request) (toolchain.Artifact, error) {
	return build(ctx, r, filepath.Join(toolchain.CacheDir(), "emu"))
}

// Version is the host compiler's version string.
func Version() (string, error) {
	cxx, err := Compiler()
	if err != nil {
		return "", err
	}
	return toolchain.CompilerVersion(cxx)
}

func build(ctx context.Context, r toolchain.Request, cacheDir string) (toolchain.Artifact, error) {
	src, sub := r.Source, r.Submission
	cxx, err := Compiler()
	if err != nil {
		return toolchain.Artifact{}, err
	}
	emuDir, err := Dir(r.IncludeDirs)
	if err != nil {
		return toolchain.Artifact{}, err
	}
	ver, err := toolchain.CompilerVersion(cxx)
	if err != nil {
		return toolchain.Artifact{}, err
	}
	if _, err := os.Stat(src); err != nil {
		return toolchain.Artifact{}, fmt.Errorf("kernel file: %w", err)
	}
	incs := []string{}
	seen := map[string]bool{}
	for _, d := range append(append([]string{}, r.IncludeDirs...), emuDir) {
		if !seen[d] {
			seen[d] = true
			incs = append(incs, d)
		}
	}
	flags := append(append([]string{}, CXXFlags...), r.Flags...)
	parts := append([]string{genVersion, ver, strings.Join(incs, "\x00")}, flags...)
	var clang, clangVer string
	if sub != nil {
		// A submission's key holds its content, not its path: the same file graded again reuses
		// its object, and no object built from other content can match.
		parts = append(parts, "submission", filepath.Base(src))
		if sub.DeviceCheck {
			if clang, err = toolchain.DeviceCompiler(); err != nil {
				return toolchain.Artifact{}, err
			}
			if clangVer, err = toolchain.CompilerVersion(clang); err != nil {
				return toolchain.Artifact{}, err
			}
			parts = append(parts, "device-check", clangVer)
		}
	} else {
		parts = append(parts, src)
	}
	key, err := toolchain.Key(parts, []string{src})
	if err != nil {
		return toolchain.Artifact{}, err
	}
	base := strings.TrimSuffix(filepath.Base(src), filepath.Ext(src))
	index := filepath.Join(cacheDir, fmt.Sprintf("%s-%s.deps.json", base, key))
	if a, ok := toolchain.Cached(index); ok {
		return a, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return toolchain.Artifact{}, err
	}
	rt, rtLog, err := buildRuntime(ctx, cxx, ver, emuDir, flags, cacheDir)
	if err != nil {
		return toolchain.Artifact{Log: rtLog}, err
	}
	unlock := lock(index)
	defer unlock()
	if a, ok := toolchain.Cached(index); ok { // built by another goroutine meanwhile
		return a, nil
	}

	// Every build happens in a scratch folder of its own: the generated registry, the link to the
	// runtime and the object are written there, and a submission is copied there alone.
	w, err := toolchain.NewWorkspace(cacheDir, src, sub, incs, nil)
	if err != nil {
		return toolchain.Artifact{}, err
	}
	defer w.Close()
	scratch := w.Dir
	// run returns a command's messages, or for -E the preprocessed text.
	run := func(name string, args []string) (string, error) {
		stdout, stderr, err := w.Run(ctx, name, args)
		if err == nil && slices.Contains(args, "-E") {
			return stdout, nil
		}
		return stderr + stdout, err
	}
	failed := func(name string, args []string, out string) (toolchain.Artifact, error) {
		if ctx.Err() != nil {
			return toolchain.Artifact{Log: out}, ctx.Err()
		}
		return toolchain.Artifact{Log: out}, w.Fail(name, args, out)
	}

	incArgs := []string{"-iquote", filepath.Dir(w.Source)}
	for _, d := range incs {
		incArgs = append(incArgs, "-I", d)
	}
	// 0. A submission must also be CUDA device code (the device-code check).
	if sub != nil && sub.DeviceCheck {
		dargs := toolchain.DeviceCheckArgs(clang, w.Source, incs, filepath.Join(scratch, "device.d"))
		if out, err := run(clang, dargs); err != nil {
			if ctx.Err() != nil {
				return toolchain.Artifact{Log: out}, ctx.Err()
			}
			ce := w.Fail(clang, dargs, out)
			ce.Stage = "the device-code check: it must also compile as CUDA device code, as nvcc compiles it on a GPU"
			return toolchain.Artifact{Log: out}, ce
		}
		if err := w.ReadDeps(filepath.Join(scratch, "device.d")); err != nil {
			return toolchain.Artifact{}, err
		}
	}
	// 1. Preprocess with the scan markers and find the entries.
	scanArgs := append(append(append([]string{}, flags...), "-DKL_EMU_SCAN=1", "-E", "-x", "c++",
		"-include", "kl_emu.h", "-MD", "-MF", filepath.Join(scratch, "scan.d")), incArgs...)
	scanArgs = append(scanArgs, w.Source)
	pre, perr := run(cxx, scanArgs)
	if perr != nil {
		return failed(cxx, scanArgs, pre)
	}
	if err := w.ReadDeps(filepath.Join(scratch, "scan.d")); err != nil {
		return toolchain.Artifact{}, err
	}
	entries, shared, err := scan(pre)
	if err != nil {
		return toolchain.Artifact{}, fmt.Errorf("%s: reading its kernel entries: %w", src, err)
	}
	// 2. Generate the registry, which includes the kernel file, and compile it into the object,
	// linked to a copy of the runtime in the scratch folder (found beside the object at run time).
	gen := filepath.Join(scratch, base+".gen.cc")
	if err := os.WriteFile(gen, []byte(generate(filepath.Base(w.Source), entries, shared)), 0o644); err != nil {
		return toolchain.Artifact{}, err
	}
	if err := linkOrCopy(rt, filepath.Join(scratch, filepath.Base(rt))); err != nil {
		return toolchain.Artifact{}, err
	}
	tmp := filepath.Join(scratch, base+".so")
	args := append(append([]string{}, flags...), "-shared", "-fvisibility=hidden", "-MD", "-MF", filepath.Join(scratch, "build.d"))
	args = append(args, incArgs...)
	// --no-as-needed: a kernel that uses nothing of the runtime (an empty stub, a kernel that only
	// spins) must still link it, since the backend finds kl_emu_launch through the module.
	args = append(args, gen, "-o", tmp, "-L", scratch, "-Wl,--no-as-needed", "-l:"+filepath.Base(rt),
		"-Wl,-rpath,$ORIGIN", "-Wl,-z,defs")
	out, cerr := run(cxx, args)
	if cerr != nil {
		return failed(cxx, args, out)
	}
	out = w.Relocate(out)
	if err := w.ReadDeps(filepath.Join(scratch, "build.d")); err != nil {
		return toolchain.Artifact{}, err
	}
	if err := w.Audit(incs); err != nil {
		return toolchain.Artifact{Log: out}, err
	}
	depHash, err := w.DepHash()
	if err != nil {
		return toolchain.Artifact{Log: out}, err
	}
	if len(entries) == 0 {
		out += fmt.Sprintf("note: %s defines no extern \"C\" __global__ function: the module has no kernels\n", src)
	}
	so := filepath.Join(cacheDir, fmt.Sprintf("%s-%s-%s.so", base, key, depHash))
	// The generated registry stays beside the object, for whoever debugs the build.
	if err := os.Rename(gen, strings.TrimSuffix(so, ".so")+".gen.cc"); err != nil {
		return toolchain.Artifact{Log: out}, err
	}
	if err := w.Commit(index, tmp, so, out); err != nil {
		return toolchain.Artifact{Log: out}, err
	}
	return toolchain.Artifact{Path: so, Log: out}, nil
}

// linkOrCopy puts a copy of file src at dst (a hard link where the file system allows).
func linkOrCopy(src, dst string) error {
	if os.Link(src, dst) == nil {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// buildRuntime builds libklemu-<hash>.so from emu/ unless it is already in cacheDir.
func buildRuntime(ctx context.Context, cxx, ver, emuDir string, flags []string, cacheDir string) (string, string, error) {
	var files []string
	for _, pat := range []string{"*.h", "*.cc"} {
		m, _ := filepath.Glob(filepath.Join(emuDir, pat))
		files = append(files, m...)
	}
	key, err := toolchain.Key(append([]string{genVersion, "runtime", ver}, flags...), files)
	if err != nil {
		return "", "", err
	}
	rt := filepath.Join(cacheDir, "libklemu-"+key+".so")
	if _, err := os.Stat(rt); err == nil {
		return rt, "", nil
	}
	if err := Check(); err != nil {
		return "", "", err
	}
	unlock := lock(rt)
	defer unlock()
	if _, err := os.Stat(rt); err == nil {
		return rt, "", nil
	}
	tmp := fmt.Sprintf("%s.%d.tmp", rt, os.Getpid())
	src := filepath.Join(emuDir, "kl_emu_rt.cc")
	base := append(append([]string{}, flags...), "-shared", "-I", emuDir, src, "-o", tmp)
	// Boost.Context statically when its archive allows (no run-time dependency), else shared.
	var out []byte
	for _, lib := range []string{"-l:libboost_context.a", "-lboost_context"} {
		args := append(append([]string{}, base...), lib, "-Wl,-z,defs")
		out, err = exec.CommandContext(ctx, cxx, args...).CombinedOutput()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return "", string(out), ctx.Err()
		}
	}
	if err != nil {
		os.Remove(tmp)
		return "", string(out), &toolchain.CompileError{Source: src, Command: cxx + " " + strings.Join(base, " "),
			Diagnostics: toolchain.ParseDiagnostics(string(out)), Output: string(out)}
	}
	if err := os.Rename(tmp, rt); err != nil {
		os.Remove(tmp)
		return "", string(out), err
	}
	return rt, string(out), nil
}
