package toolchain

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
)

// compilePolicy is what a compiler that builds a submission may touch: read the system (its own
// programs and headers) and the include folders, write the scratch folder, run its own tools
// (cc1plus, as, ld). The course tree and the build cache are not readable.
type compilePolicy struct {
	Read  []string
	Write []string
	Exec  bool
}

// systemReadDirs are the folders a compiler needs to read: its programs, libraries and headers,
// and /etc for the dynamic loader's cache and the alternatives links (c++ → g++). A course tree
// inside one of them cannot be protected by the sandbox; the dependency audit still checks it.
var systemReadDirs = []string{"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt", "/usr/local"}

func submissionPolicy(scratch string, includeDirs []string) compilePolicy {
	p := compilePolicy{Write: []string{scratch}, Exec: true}
	for _, d := range systemReadDirs {
		if _, err := os.Stat(d); err == nil {
			p.Read = append(p.Read, d)
		}
	}
	p.Read = append(p.Read, includeDirs...)
	return p
}

// compilerCommand is the one place where a compiler that builds a submission is started. It
// runs with an environment of its own (no secret, no variable of the grader's) and its temporary
// files in the scratch folder.
//
// TODO(sandbox): once internal/sandbox is on main, start it through sandbox.Command(Policy{Read,
// Write, Exec}, name, args...) so that Landlock and seccomp confine it, and refuse (as the grade
// does) where sandbox.Check() fails. Until then the dependency audit (AuditDeps) is what keeps the
// reference out of a submission's build.
func compilerCommand(ctx context.Context, p compilePolicy, name string, args ...string) (*exec.Cmd, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	tmp := os.TempDir()
	if len(p.Write) > 0 {
		tmp = p.Write[0]
	}
	cmd.Env = []string{"PATH=" + filepath.Dir(name) + ":/usr/bin:/bin", "TMPDIR=" + tmp, "LC_ALL=C", "HOME=" + tmp}
	cmd.Dir = tmp
	return cmd, nil
}
