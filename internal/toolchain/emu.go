package toolchain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// The CPU emulator's builds. A kernel file becomes a shared object that holds the kernels, a
// generated registry of its extern "C" entries (names, parameter types and sizes) and a link to
// the emulator's runtime, libklemu-<hash>.so, built once from emu/ into the same cache folder.
// The Go backend (internal/gpu/emu) dlopens the kernel object; nothing of the emulator is
// compiled into the labrun binary except a few lines of dlopen glue.

// emuGenVersion changes whenever the registry generator or the build's shape changes.
const emuGenVersion = "emu-build-4"

// EmuCXXFlags are the C++ flags of every emulator build: C++17, optimized (the emulator's speed
// is the kernel's speed), no strict aliasing, since CUDA code reinterprets float* as float4*, and
// no assumption that loops end: C++ lets g++ delete a spin on a plain (non-volatile) load as a
// loop without side effects, where nvcc keeps it and hoists the load, so the kernel hangs on a
// GPU; with -fno-finite-loops it hangs on the emulator too, and the time limit reports it.
var EmuCXXFlags = []string{"-std=c++17", "-O2", "-fno-finite-loops", "-fPIC", "-pthread", "-fno-strict-aliasing",
	"-fdiagnostics-color=never", "-fmax-errors=20"}

// EmuPackages are the Debian packages the emulator's builds need.
var EmuPackages = []string{"g++", "libboost-context-dev"}

func init() {
	RegisterBuilder("c++", BuildEmuRequest, func() (string, error) {
		cxx, err := EmuCompiler()
		if err != nil {
			return "", err
		}
		return CompilerVersion(cxx)
	})
}

// EmuCompiler is the host C++ compiler: $CXX, else c++, else g++.
func EmuCompiler() (string, error) {
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
	emuCheckMu  sync.Mutex
	emuCheckErr = map[string]error{}
)

// CheckEmu says whether kernels can be built for the emulator here: a C++ compiler that finds
// Boost.Context's headers. The error names the packages to install. The result is cached.
func CheckEmu() error {
	cxx, err := EmuCompiler()
	if err != nil {
		return err
	}
	emuCheckMu.Lock()
	defer emuCheckMu.Unlock()
	if err, ok := emuCheckErr[cxx]; ok {
		return err
	}
	cmd := exec.Command(cxx, "-std=c++17", "-E", "-x", "c++", "-o", os.DevNull, "-")
	cmd.Stdin = strings.NewReader("#include <boost/context/detail/fcontext.hpp>\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		err = fmt.Errorf("the CPU emulator needs Boost.Context, which %s cannot find: install it with "+
			"`apt-get install %s` (%s)", filepath.Base(cxx), strings.Join(EmuPackages, " "), firstLine(string(out)))
	}
	emuCheckErr[cxx] = err
	return err
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// EmuDir finds the emulator's sources (kl_emu.h, kl_emu_rt.cc): $LABRUN_EMU_DIR, one of dirs, or
// an emu/ folder beside one of dirs or their parents (labs/common -> ../../emu).
func EmuDir(dirs []string) (string, error) {
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

var emuLocks sync.Map // output path -> *sync.Mutex: one build of a thing at a time in a process

func emuLock(path string) func() {
	m, _ := emuLocks.LoadOrStore(path, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// BuildEmuRequest is the "c++" Builder: BuildEmu into the emu folder of CacheDir.
func BuildEmuRequest(ctx context.Context, r Request) (Artifact, error) {
	so, cached, log, err := buildEmu(ctx, r.Source, r.IncludeDirs, r.Flags, filepath.Join(CacheDir(), "emu"), r.Submission)
	if err != nil {
		return Artifact{}, err
	}
	return Artifact{Path: so, Log: log, Cached: cached}, nil
}

// BuildEmu compiles one kernel file for the CPU emulator into a shared object in cacheDir and
// returns its path and the compiler's messages. A build is reused while its key (the source's
// content and path, the include folders, the flags, `c++ --version`) is the same and no file
// the compiler read has changed (depcache.go). Compile errors come back as a *CompileError that
// lists file:line messages.
func BuildEmu(ctx context.Context, src string, includeDirs []string, cacheDir string) (soPath string, log string, err error) {
	so, _, log, err := buildEmu(ctx, src, includeDirs, nil, cacheDir, nil)
	return so, log, err
}

func buildEmu(ctx context.Context, src string, includeDirs, extraFlags []string, cacheDir string, sub *Submission) (so string, cached bool, log string, err error) {
	cxx, err := EmuCompiler()
	if err != nil {
		return "", false, "", err
	}
	emuDir, err := EmuDir(includeDirs)
	if err != nil {
		return "", false, "", err
	}
	ver, err := CompilerVersion(cxx)
	if err != nil {
		return "", false, "", err
	}
	if _, err := os.Stat(src); err != nil {
		return "", false, "", fmt.Errorf("kernel file: %w", err)
	}
	incs := []string{}
	seen := map[string]bool{}
	for _, d := range append(append([]string{}, includeDirs...), emuDir) {
		if !seen[d] {
			seen[d] = true
			incs = append(incs, d)
		}
	}
	flags := append(append([]string{}, EmuCXXFlags...), extraFlags...)
	parts := append([]string{emuGenVersion, ver, strings.Join(incs, "\x00")}, flags...)
	var clang, clangVer string
	if sub != nil {
		// A submission's key holds its content, not its path: the same file graded again reuses
		// its object, and no object built from other content can match.
		parts = append(parts, "submission", filepath.Base(src))
		if sub.DeviceCheck {
			if clang, err = DeviceCompiler(); err != nil {
				return "", false, "", err
			}
			if clangVer, err = CompilerVersion(clang); err != nil {
				return "", false, "", err
			}
			parts = append(parts, "device-check", clangVer)
		}
	} else {
		parts = append(parts, src)
	}
	key, err := Key(parts, []string{src})
	if err != nil {
		return "", false, "", err
	}
	base := strings.TrimSuffix(filepath.Base(src), filepath.Ext(src))
	index := filepath.Join(cacheDir, fmt.Sprintf("%s-%s.deps.json", base, key))
	if obj, ok := cachedObject(index); ok {
		l, _ := os.ReadFile(obj + ".log")
		return obj, true, string(l), nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", false, "", err
	}
	rt, rtLog, err := emuBuildRuntime(ctx, cxx, ver, emuDir, flags, cacheDir)
	if err != nil {
		return "", false, rtLog, err
	}
	unlock := emuLock(index)
	defer unlock()
	if obj, ok := cachedObject(index); ok { // built by another goroutine meanwhile
		l, _ := os.ReadFile(obj + ".log")
		return obj, true, string(l), nil
	}

	// Every build happens in a scratch folder of its own: the generated registry, the link to the
	// runtime and the object are written there, and a submission is copied there alone.
	scratch, err := os.MkdirTemp(cacheDir, "build-")
	if err != nil {
		return "", false, "", err
	}
	defer os.RemoveAll(scratch)
	orig, origDir := src, filepath.Dir(src)
	pol := compilePolicy{}
	if sub != nil {
		data, rerr := os.ReadFile(src)
		if rerr != nil {
			return "", false, "", fmt.Errorf("submitted file: %w", rerr)
		}
		if ds := ScanIncludes(orig, data); len(ds) > 0 {
			return "", false, "", &CompileError{Source: orig, Command: "include scan", Diagnostics: ds, Output: diagText(ds), Stage: "include refused"}
		}
		if src, _, err = hermeticCopy(orig, scratch); err != nil {
			return "", false, "", err
		}
		pol = submissionPolicy(scratch, incs, sub)
	}
	srcDir := filepath.Dir(src)
	fail := func(cmd string, args []string, out string) error {
		out = relocate(out, scratch, origDir)
		return &CompileError{Source: orig, Command: cmd + " " + strings.Join(args, " "), Diagnostics: ParseDiagnostics(out), Output: out}
	}
	run := func(name string, args []string) (string, error) {
		if sub == nil {
			return emuRun(ctx, name, args)
		}
		stdout, stderr, err := runCompiler(ctx, pol, name, args)
		if err != nil {
			return stderr + stdout, err
		}
		for _, a := range args {
			if a == "-E" {
				return stdout, nil // the preprocessed text
			}
		}
		return stderr + stdout, nil
	}

	incArgs := []string{"-iquote", srcDir}
	for _, d := range incs {
		incArgs = append(incArgs, "-I", d)
	}
	var deps []string
	// 0. A submission must also be CUDA device code (the device-code check).
	if sub != nil && sub.DeviceCheck {
		dargs := DeviceCheckArgs(clang, src, incs, filepath.Join(scratch, "device.d"))
		if out, err := run(clang, dargs); err != nil {
			if ctx.Err() != nil {
				return "", false, out, ctx.Err()
			}
			ce := fail(clang, dargs, out).(*CompileError)
			ce.Stage = "the device-code check: it must also compile as CUDA device code, as nvcc compiles it on a GPU"
			return "", false, out, ce
		}
		d, err := readDeps(filepath.Join(scratch, "device.d"))
		if err != nil {
			return "", false, "", err
		}
		deps = append(deps, d...)
	}
	// 1. Preprocess with the scan markers and find the entries.
	scanArgs := append(append(append([]string{}, flags...), "-DKL_EMU_SCAN=1", "-E", "-x", "c++",
		"-include", "kl_emu.h", "-MD", "-MF", filepath.Join(scratch, "scan.d")), incArgs...)
	scanArgs = append(scanArgs, src)
	pre, perr := run(cxx, scanArgs)
	if perr != nil {
		return "", false, pre, fail(cxx, scanArgs, pre)
	}
	d, err := readDeps(filepath.Join(scratch, "scan.d"))
	if err != nil {
		return "", false, "", err
	}
	deps = append(deps, d...)
	entries, shared, err := emuScan(pre)
	if err != nil {
		return "", false, "", fmt.Errorf("%s: reading its kernel entries: %w", orig, err)
	}
	// 2. Generate the registry, which includes the kernel file, and compile it into the object,
	// linked to a copy of the runtime in the scratch folder (found beside the object at run time).
	gen := filepath.Join(scratch, base+".gen.cc")
	if err := os.WriteFile(gen, []byte(emuGenerate(filepath.Base(src), entries, shared)), 0o644); err != nil {
		return "", false, "", err
	}
	rtLink := filepath.Join(scratch, filepath.Base(rt))
	if err := linkOrCopy(rt, rtLink); err != nil {
		return "", false, "", err
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
		if ctx.Err() != nil {
			return "", false, out, ctx.Err()
		}
		return "", false, out, fail(cxx, args, out)
	}
	out = relocate(out, scratch, origDir)
	if d, err = readDeps(filepath.Join(scratch, "build.d")); err != nil {
		return "", false, "", err
	}
	deps = append(deps, d...)
	if sub != nil {
		if msgs := AuditDeps(deps, scratch, append([]string{scratch}, incs...), append(append([]string{}, sub.Protect...), cacheDir)); len(msgs) > 0 {
			return "", false, out, &CompileError{Source: orig, Command: "dependency audit", Stage: "it read the course tree",
				Diagnostics: []Diagnostic{{File: orig, Line: 1, Kind: "error", Message: msgs[0]}}, Output: strings.Join(msgs, "\n")}
		}
	}
	hashed, depHash, err := hashDeps(deps, scratch, []string{scratch})
	if err != nil {
		return "", false, out, err
	}
	if len(entries) == 0 {
		out += fmt.Sprintf("note: %s defines no extern \"C\" __global__ function: the module has no kernels\n", orig)
	}
	so = filepath.Join(cacheDir, fmt.Sprintf("%s-%s-%s.so", base, key, depHash))
	if err := os.WriteFile(so+".log", []byte(out), 0o644); err != nil {
		return "", false, out, err
	}
	// The generated registry stays beside the object, for whoever debugs the build.
	if err := os.Rename(gen, strings.TrimSuffix(so, ".so")+".gen.cc"); err != nil {
		return "", false, out, err
	}
	if err := os.Rename(tmp, so); err != nil {
		return "", false, out, err
	}
	if err := writeIndex(index, so, hashed); err != nil {
		return "", false, out, err
	}
	return so, false, out, nil
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

func diagText(ds []Diagnostic) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String() + "\n")
	}
	return b.String()
}

// emuBuildRuntime builds libklemu-<hash>.so from emu/ unless it is already in cacheDir.
func emuBuildRuntime(ctx context.Context, cxx, ver, emuDir string, flags []string, cacheDir string) (string, string, error) {
	var files []string
	for _, pat := range []string{"*.h", "*.cc"} {
		m, _ := filepath.Glob(filepath.Join(emuDir, pat))
		files = append(files, m...)
	}
	key, err := Key(append([]string{emuGenVersion, "runtime", ver}, flags...), files)
	if err != nil {
		return "", "", err
	}
	rt := filepath.Join(cacheDir, "libklemu-"+key+".so")
	if _, err := os.Stat(rt); err == nil {
		return rt, "", nil
	}
	if err := CheckEmu(); err != nil {
		return "", "", err
	}
	unlock := emuLock(rt)
	defer unlock()
	if _, err := os.Stat(rt); err == nil {
		return rt, "", nil
	}
	tmp := fmt.Sprintf("%s.%d.tmp", rt, os.Getpid())
	src := filepath.Join(emuDir, "kl_emu_rt.cc")
	base := append(append([]string{}, flags...), "-shared", "-I", emuDir, src, "-o", tmp)
	// Boost.Context statically when its archive allows (no run-time dependency), else shared.
	var out string
	for _, lib := range []string{"-l:libboost_context.a", "-lboost_context"} {
		args := append(append([]string{}, base...), lib, "-Wl,-z,defs")
		out, err = emuRun(ctx, cxx, args)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return "", out, ctx.Err()
		}
	}
	if err != nil {
		os.Remove(tmp)
		return "", out, &CompileError{Source: src, Command: cxx + " " + strings.Join(base, " "),
			Diagnostics: ParseDiagnostics(out), Output: out}
	}
	if err := os.Rename(tmp, rt); err != nil {
		os.Remove(tmp)
		return "", out, err
	}
	return rt, out, nil
}

func emuRun(ctx context.Context, name string, args []string) (string, error) {
	return emuRunCmd(exec.CommandContext(ctx, name, args...), args)
}

// emuRunCmd runs a compiler command and returns its messages (or, for -E, the preprocessed text).
func emuRunCmd(cmd *exec.Cmd, args []string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return stderr.String() + stdout.String(), err
	}
	for _, a := range args {
		if a == "-E" {
			return stdout.String(), nil // the preprocessed text
		}
	}
	return stderr.String() + stdout.String(), nil
}
