package labtest

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

var includeRE = regexp.MustCompile(`^\s*#\s*include\s+"([^"]+)"`)

// PTXOnGPUOnly says whether a kernel file, with the course headers it includes (from its own
// folder or commonDir), has inline PTX that has no emulator form: an asm statement that is not in
// the #else branch of an `#if defined(KL_BACKEND_EMU)` (the wrappers of cp.async, ldmatrix and
// mma.sync have such a branch; wgmma's and TMA's do not). Such a variant needs emu_skip.
// usesPTX says whether there is inline PTX at all (then the variant is NVIDIA-only).
func PTXOnGPUOnly(file, commonDir string) (usesPTX, gpuOnly bool, err error) {
	seen := map[string]bool{}
	var scan func(path string) error
	scan = func(path string) error {
		if seen[path] {
			return nil
		}
		seen[path] = true
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		// The stack of open #if blocks: whether each is KL_BACKEND_EMU's and in its #else.
		type block struct{ emu, inElse bool }
		var stack []block
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			switch {
			case strings.HasPrefix(line, "#if"):
				stack = append(stack, block{emu: strings.Contains(line, "KL_BACKEND_EMU") && !strings.Contains(line, "!")})
			case strings.HasPrefix(line, "#el"):
				if n := len(stack); n > 0 {
					stack[n-1].inElse = true
				}
			case strings.HasPrefix(line, "#endif"):
				if n := len(stack); n > 0 {
					stack = stack[:n-1]
				}
			case strings.Contains(line, "asm volatile") || strings.HasPrefix(line, "asm("):
				usesPTX = true
				emulated := false
				for _, b := range stack {
					emulated = emulated || (b.emu && b.inElse)
				}
				gpuOnly = gpuOnly || !emulated
			}
			if m := includeRE.FindStringSubmatch(line); m != nil && m[1] != "kl.cuh" {
				for _, dir := range []string{filepath.Dir(path), commonDir} {
					if p := filepath.Join(dir, m[1]); fileExists(p) {
						if err := scan(p); err != nil {
							return err
						}
						break
					}
				}
			}
		}
		return sc.Err()
	}
	err = scan(file)
	return usesPTX, gpuOnly, err
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
