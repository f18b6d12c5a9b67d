package toolchain

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseDiagnostics(t *testing.T) {
	out := `kernels/01_copy.cu(12): error: identifier "flaot4" is undefined
kernels/01_copy.cu(30): warning #177-D: variable "i" was declared but never referenced
/tmp/x.cu:7:3: error: expected ';' before '}' token
/tmp/y.cu:1:10: fatal error: missing.h: No such file or directory
ptxas info    : Used 32 registers`
	ds := ParseDiagnostics(out)
	require.Len(t, ds, 4)
	assert.Equal(t, Diagnostic{File: "kernels/01_copy.cu", Line: 12, Kind: "error", Message: `identifier "flaot4" is undefined`}, ds[0])
	assert.Equal(t, "warning", ds[1].Kind)
	assert.Equal(t, Diagnostic{File: "/tmp/x.cu", Line: 7, Kind: "error", Message: "expected ';' before '}' token"}, ds[2])
	assert.Equal(t, "error", ds[3].Kind)
}

func TestCompileErrorShowsFileLine(t *testing.T) {
	e := &CompileError{Source: "k.cu", Diagnostics: ParseDiagnostics("k.cu(3): error: bad thing\nk.cu(4): warning: meh")}
	assert.Equal(t, "compiling k.cu failed:\n  k.cu:3: error: bad thing", e.Error())
	d, ok := e.First()
	require.True(t, ok)
	assert.Equal(t, 3, d.Line)
	// Without located errors, the output's tail is shown.
	e = &CompileError{Source: "k.cu", Output: "nvcc fatal: Unsupported gpu architecture 'compute_12'"}
	assert.Contains(t, e.Error(), "Unsupported gpu architecture")
}

func TestKeyDependsOnContentAndFlags(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "a.cu")
	require.NoError(t, os.WriteFile(src, []byte("one"), 0o644))
	k1, err := Key([]string{"cuda", "v1", "sm_90"}, []string{src})
	require.NoError(t, err)
	k2, _ := Key([]string{"cuda", "v1", "sm_90a"}, []string{src})
	assert.NotEqual(t, k1, k2)
	require.NoError(t, os.WriteFile(src, []byte("two"), 0o644))
	k3, _ := Key([]string{"cuda", "v1", "sm_90"}, []string{src})
	assert.NotEqual(t, k1, k3)
	_, err = Key(nil, []string{filepath.Join(dir, "missing.cu")})
	assert.Error(t, err)
}
