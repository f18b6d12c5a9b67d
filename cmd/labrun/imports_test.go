package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

// TestEveryLabIsRegistered: a labs/NN_name folder that labrun does not import has no driver, so
// `labrun NN` would fail at run time; add its import to imports.go (its init registers it).
func TestEveryLabIsRegistered(t *testing.T) {
	root := repoRoot(t)
	entries, err := os.ReadDir(filepath.Join(root, "labs"))
	require.NoError(t, err)
	folder := regexp.MustCompile(`^\d\d_[a-z0-9_]+$`)
	n := 0
	for _, e := range entries {
		if !e.IsDir() || !folder.MatchString(e.Name()) {
			continue
		}
		n++
		_, ok := lab.DriverFor(e.Name())
		assert.True(t, ok, "labs/%s has no registered driver: import its package in cmd/labrun/imports.go", e.Name())
	}
	require.NotZero(t, n, "no labs/NN_name folder under %s", root)
}
