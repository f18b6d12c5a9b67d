package toolchain

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/kernel-labs/kernellabs/internal/sandbox"
)

// compilePolicy is what a compiler that builds a submission may touch: read the system (its own
// programs and headers) and the include folders, write the scratch folder, run its own tools
// (cc1plus, as, ld). The rest of the course tree and the build cache are out of reach.
type compilePolicy struct {
	Read    []string
	Write   []string
	Secret  []string // paths the policy must not expose (sandbox.Policy.Secret)
	Sandbox bool     // confine the compiler (Landlock, seccomp); false: an empty environment only
}

// submissionPolicy is the policy of a submission's build in scratch, with includeDirs (labs/common
// and emu/) readable and the rest of each protected tree secret.
func submissionPolicy(scratch string, includeDirs []string, sub *Submission) compilePolicy {
	p := compilePolicy{Write: []string{scratch}, Sandbox: sub.Sandbox}
	p.Read = append(append([]string{}, sandbox.SystemRead...), includeDirs...)
	p.Secret = secretsAround(sub.Protect, append([]string{scratch}, includeDirs...))
	return p
}

// secretsAround lists what of the protected trees must stay out of reach when the folders in
// open (inside them) are readable: every entry of a protected folder that neither is nor holds
// an open folder, recursively. For a course tree with labs/common and emu/ open: its every
// top-level entry but labs and emu, and every lab folder but common.
func secretsAround(protect, open []string) []string {
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			holds, is := false, false
			for _, o := range open {
				o = filepath.Clean(o)
				if o == p {
					is = true
				} else if within(o, p) {
					holds = true
				}
			}
			switch {
			case is:
			case holds:
				walk(p)
			default:
				out = append(out, p)
			}
		}
	}
	for _, d := range protect {
		if abs, err := filepath.Abs(d); err == nil {
			walk(abs)
		}
	}
	return out
}

// runCompiler is the one place where a compiler that builds a submission is started: with an
// environment of its own (no secret, no variable of the grader's), its temporary files in the
// scratch folder, and, under p.Sandbox, confined by internal/sandbox (Landlock: read only
// p.Read, write only p.Write; seccomp: no network, no ptrace, no signals outside its process
// group). Whatever it started is killed when it ends or ctx is done. It returns stdout and
// stderr.
func runCompiler(ctx context.Context, p compilePolicy, name string, args []string) (string, string, error) {
	tmp := os.TempDir()
	if len(p.Write) > 0 {
		tmp = p.Write[0]
	}
	env := []string{"PATH=" + filepath.Dir(name) + ":/usr/bin:/bin", "TMPDIR=" + tmp, "LC_ALL=C", "HOME=" + tmp}
	var stdout, stderr bytes.Buffer
	if !p.Sandbox {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, tmp, &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	cmd, err := sandbox.Command(sandbox.Policy{Read: p.Read, Write: p.Write, Exec: true, Env: env, Secret: p.Secret}, name, args...)
	if err != nil {
		return "", "", fmt.Errorf("starting the compiler in the sandbox: %w", err)
	}
	cmd.Dir, cmd.Stdout, cmd.Stderr = tmp, &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return "", "", fmt.Errorf("starting the compiler in the sandbox: %w", err)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			cmd.Kill()
		case <-done:
		}
	}()
	err = cmd.Wait()
	close(done)
	cmd.Kill()
	if ctx.Err() != nil && err != nil {
		err = ctx.Err()
	}
	return stdout.String(), stderr.String(), err
}
