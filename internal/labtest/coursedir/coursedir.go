// Package coursedir writes course folders for tests: a root with the course's header
// (labs/common/kl.cuh) and one lab folder. It imports nothing of the course, so the engine's own
// tests (package lab) use it as well as the grader's, the CLI's and the labs'. Only test files
// import it.
package coursedir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Write makes a course root in a temporary folder with labs/common/kl.cuh and the lab folder
// labs/<lab> holding files (paths relative to the lab folder, folders made as needed), and
// returns the root.
func Write(t testing.TB, lab string, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	all := map[string]string{filepath.Join("labs", "common", "kl.cuh"): "#pragma once\n"}
	for name, body := range files {
		all[filepath.Join("labs", lab, name)] = body
	}
	for name, body := range all {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	return root
}

// Root makes a course root in a temporary folder with labs/common/kl.cuh and no lab folder, points
// LABRUN_ROOT at it (as the course that the code under test finds) and returns it.
func Root(t *testing.T) string {
	t.Helper()
	root := Write(t, "", nil)
	t.Setenv("LABRUN_ROOT", root)
	return root
}
