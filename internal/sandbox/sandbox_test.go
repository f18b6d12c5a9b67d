package sandbox

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test binary stands in for labrun: Command re-executes it as the wrapper.
func TestMain(m *testing.M) { os.Exit(StandIn(m.Run)) }

func needSandbox(t *testing.T) {
	t.Helper()
	if err := Check(); err != nil {
		t.Skipf("no sandbox on this kernel: %v", err)
	}
}

func shell(t *testing.T, p Policy, script string) (string, error) {
	t.Helper()
	cmd, err := Command(p, "/bin/sh", "-c", script)
	require.NoError(t, err)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestPolicyConfinesFiles(t *testing.T) {
	needSandbox(t)
	secret := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(secret, "answer.cu"), []byte("the solution"), 0o644))
	scratch := t.TempDir()
	p := Policy{Read: SystemRead, Write: []string{scratch}, Exec: true, Env: []string{"PATH=/usr/bin:/bin"}}

	out, err := shell(t, p, "cat "+filepath.Join(secret, "answer.cu"))
	assert.Error(t, err, "read a file outside the policy: %s", out)
	assert.NotContains(t, out, "the solution")

	out, err = shell(t, p, "echo hi > "+filepath.Join(scratch, "x")+" && cat "+filepath.Join(scratch, "x"))
	require.NoError(t, err, out)
	assert.Equal(t, "hi", strings.TrimSpace(out))

	_, err = shell(t, p, "echo hi > "+filepath.Join(secret, "forged"))
	assert.Error(t, err)
	assert.NoFileExists(t, filepath.Join(secret, "forged"))

	out, _ = shell(t, p, "cat /proc/1/environ /proc/self/environ 2>&1; echo; echo \"env:$LABRUN_SECRET_SEED\"")
	assert.NotContains(t, out, "SECRET")
	assert.Contains(t, out, "env:")
}

func TestPolicyRefusesSecrets(t *testing.T) {
	_, err := Command(Policy{Read: []string{"/work"}, Secret: []string{"/work/course"}}, "/bin/true")
	if err != nil && strings.Contains(err.Error(), "cannot sandbox") {
		t.Skip(err)
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/work/course")
	_, err = Command(Policy{Read: []string{"relative"}}, "/bin/true")
	require.Error(t, err)
}

func TestNoNetworkNoSignals(t *testing.T) {
	needSandbox(t)
	p := Policy{Read: SystemRead, Exec: true, Env: []string{"PATH=/usr/bin:/bin"}}
	// The parent (this test) must survive a kill of its process: signals leave no sandbox.
	out, err := shell(t, p, "kill -9 "+strconv.Itoa(os.Getpid())+" 2>&1; echo done")
	require.NoError(t, err, out)
	assert.Contains(t, out, "done")
	if _, err := exec.LookPath("python3"); err == nil {
		out, err = shell(t, p, `python3 -c "import socket; socket.socket()" 2>&1`)
		assert.Error(t, err, out)
	}
}

func TestProgramInASecretFolderRunsButExposesNothingElse(t *testing.T) {
	needSandbox(t)
	secret := t.TempDir()
	prog := filepath.Join(secret, "prog.sh")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\ncat "+filepath.Join(secret, "answer")+" 2>&1; echo ran\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(secret, "answer"), []byte("the solution"), 0o644))
	cmd, err := Command(Policy{Read: SystemRead, Exec: true, Secret: []string{secret}}, prog)
	require.NoError(t, err)
	out, _ := cmd.CombinedOutput()
	assert.Contains(t, string(out), "ran")
	assert.NotContains(t, string(out), "the solution")
	_, err = Command(Policy{Read: []string{secret}, Exec: true, Secret: []string{secret}}, "/bin/true")
	assert.Error(t, err, "a Read path inside a secret is refused")
}

func TestOnlyKeptDescriptorsReachTheProgram(t *testing.T) {
	needSandbox(t)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	stray, err := os.Open(os.DevNull) // an fd of this process that must not leak in
	require.NoError(t, err)
	defer stray.Close()
	cmd, err := Command(Policy{Read: SystemRead, Exec: true, KeepFiles: 1}, "/bin/sh", "-c", "ls /proc/self/fd 2>&1; echo kept >&3")
	require.NoError(t, err)
	cmd.ExtraFiles = []*os.File{w}
	out, err := cmd.CombinedOutput()
	w.Close()
	kept, _ := io.ReadAll(r)
	require.NoError(t, err, string(out))
	assert.Equal(t, "kept\n", string(kept))
}
