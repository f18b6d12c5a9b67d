package toolchain

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// The device-code check. The emulator compiles a kernel file as host C++, which accepts what
// nvcc rejects in device code: std::vector in a kernel, a call to a host function, exceptions. A
// submission graded on the emulator must therefore also compile as CUDA device code. Clang
// compiles CUDA itself, and in syntax-only mode it needs neither a GPU nor a CUDA install: the
// course's portability header (labs/common/kl.cuh) takes CUDA's device API from
// emu/kl_device_check.h, which the check force-includes.

// DevicePackages are the Debian packages the device-code check needs.
var DevicePackages = []string{"clang"}

// DeviceCompiler is clang++ for the device-code check: $LABRUN_CLANG, else clang++ on PATH, else
// the newest clang++-NN.
func DeviceCompiler() (string, error) {
	if c := os.Getenv("LABRUN_CLANG"); c != "" {
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
		return "", fmt.Errorf("$LABRUN_CLANG=%s not found: %s", c, installClang)
	}
	if p, err := exec.LookPath("clang++"); err == nil {
		return p, nil
	}
	for v := 30; v >= 11; v-- {
		if p, err := exec.LookPath(fmt.Sprintf("clang++-%d", v)); err == nil {
			return p, nil
		}
	}
	return "", errors.New("clang++ not found: " + installClang)
}

var installClang = "the emulator's device-code check (a submission must also compile as CUDA device code, as on a GPU) " +
	"needs clang; install it with `apt-get install " + strings.Join(DevicePackages, " ") + "` (or set LABRUN_CLANG to a clang++), " +
	"or grade without the check (--no-device-check; the report says so)"

var (
	devArchMu sync.Mutex
	devArch   = map[string]string{}
)

// deviceArch is the newest of the GPU targets the course needs that this clang knows (sm_90 from
// clang 16 on; sm_80 before). Syntax only: the target decides which builtins exist, nothing more.
func deviceArch(clang string) string {
	devArchMu.Lock()
	defer devArchMu.Unlock()
	if a, ok := devArch[clang]; ok {
		return a
	}
	a := "sm_80"
	for _, try := range []string{"sm_90", "sm_80"} {
		cmd := exec.Command(clang, "-x", "cuda", "--cuda-device-only", "-fsyntax-only", "-nocudainc", "-nocudalib",
			"--cuda-gpu-arch="+try, "-")
		cmd.Stdin = strings.NewReader("__attribute__((global)) void k() {}\n")
		if cmd.Run() == nil {
			a = try
			break
		}
	}
	devArch[clang] = a
	return a
}

// DeviceCheckArgs is the command line of the device-code check of src (without the program
// name), which writes the files it read to depFile.
func DeviceCheckArgs(clang, src string, includeDirs []string, depFile string) []string {
	args := []string{"-x", "cuda", "--cuda-device-only", "-fsyntax-only", "-nocudainc", "-nocudalib",
		"--cuda-gpu-arch=" + deviceArch(clang), "-std=c++17", "-fno-color-diagnostics", "-ferror-limit=20",
		"-Wno-unknown-cuda-version", "-include", "kl_device_check.h", "-MD", "-MF", depFile, "-MT", "device-check"}
	for _, d := range includeDirs {
		args = append(args, "-I", d)
	}
	return append(args, src)
}

// CheckDeviceCompiler says whether the device-code check can run here.
func CheckDeviceCompiler() error {
	_, err := DeviceCompiler()
	return err
}
