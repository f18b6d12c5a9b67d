package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCLIProfile(t *testing.T) {
	root := course(t, demoKernel)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "labs", "07_demo", "kernels"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "labs", "07_demo", "kernels", "k.cu"), []byte("extern \"C\" __global__ void k() {}\n"), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		code int
		want string
	}{
		{"which lab", []string{"profile"}, nil, exitUsage, "which lab?"},
		{"unknown variant", []string{"profile", "07", "--variant", "zzz"}, nil, exitUsage, `no variant "zzz"`},
		{"unknown problem", []string{"profile", "07", "--problem", "two"}, nil, exitUsage, `GPU problem "two"`},
		{"problem names hold commas", []string{"profile", "07", "--problem", "one, two"}, nil, exitUsage, `GPU problem "one, two"`},
		{"unknown suite", []string{"profile", "07", "--suite", "t"}, nil, exitUsage, `no suite "t"`},
		{"library without filter", []string{"profile", "07", "--variant", "lib"}, nil, exitUsage, "--kernel REGEX"},
		{"bad kind", []string{"profile", "07", "--kind", "fast"}, nil, exitUsage, "memory, compute or latency"},
		{"emulator", []string{"profile", "07", "--backend", "emu"}, nil, exitEnv, "needs an NVIDIA GPU"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, _, stderr := runCLI(tc.args...)
			assert.Equal(t, tc.code, code, stderr)
			assert.Contains(t, stderr, tc.want)
		})
	}
}
