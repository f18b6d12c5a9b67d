package lab

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/results"
)

const customManifest = `id: "98"
title: {en: Custom, zh: 自定义}
suites:
  - name: gemm
    metric: tflops
    problems:
      gpu: [{name: sq, m: 64, n: 64, k: 64}, {name: b0, m: 8, n: 8, k: 8, beta0: 1}]
    variants: [{name: lib, library: x}]
  - name: copy
    metric: gbps
    problems:
      gpu: [{name: small, bytes: 1MiB}]
    variants: [{name: lib, library: x}]
custom_flags:
  - {name: shape, help: {en: M x N x K}, sets: [m, n, k]}
  - {name: bytes, help: {en: a size}, sets: [bytes]}
  - {name: m, help: {en: M}, sets: [m]}
  - {name: n, help: {en: N}, sets: [n]}
  - {name: k, help: {en: K}, sets: [k]}
`

func TestCustomProblems(t *testing.T) {
	root := newCourse(t, customManifest)
	// newCourse names the lab 99_test; parse this manifest from the same folder.
	m, err := ParseManifest(filepath.Join(root, "labs", "99_test", "lab.yaml"), []byte(customManifest))
	require.NoError(t, err)
	drv := testDriver(t)
	tests := []struct {
		name   string
		flags  map[string]string
		suites map[string]map[string]int64 // suite → params; nil: expect an error
		errHas string
	}{
		{"shape", map[string]string{"shape": "4096x14336X4096"}, map[string]map[string]int64{"gemm": {"m": 4096, "n": 14336, "k": 4096}}, ""},
		{"shape and param", map[string]string{"shape": "1x2x3", "param": "beta0=1"}, map[string]map[string]int64{"gemm": {"m": 1, "n": 2, "k": 3, "beta0": 1}}, ""},
		{"bytes", map[string]string{"bytes": "64MiB"}, map[string]map[string]int64{"copy": {"bytes": 64 << 20}}, ""},
		{"single dims", map[string]string{"m": "5", "n": "6", "k": "7"}, map[string]map[string]int64{"gemm": {"m": 5, "n": 6, "k": 7}}, ""},
		{"wrong arity", map[string]string{"shape": "4096x4096"}, nil, "give 3 sizes separated by x (m x n x k)"},
		{"not a number", map[string]string{"shape": "4096xbigx2"}, nil, `"big" is not an integer`},
		{"negative", map[string]string{"bytes": "-5"}, nil, "negative"},
		{"bad param", map[string]string{"shape": "1x1x1", "param": "beta0"}, nil, "write key=value"},
		{"undeclared flag", map[string]string{"experts": "8"}, nil, "lab 99_test takes no --experts for a custom problem (custom_flags in its lab.yaml: --shape, --bytes, --m, --n, --k and no other"},
		{"no suite takes it", map[string]string{"bytes": "1MiB", "m": "4"}, nil, "no suite of lab 99_test takes --bytes 1MiB --m 4"},
		{"zero size", map[string]string{"shape": "0x10x10"}, nil, "m = 0: every problem of this suite has m ≥ 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := customProblems(m, drv, tc.flags)
			if tc.suites == nil {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errHas)
				var ue *UsageError
				assert.ErrorAs(t, err, &ue)
				return
			}
			require.NoError(t, err)
			require.Len(t, got, len(tc.suites))
			for s, params := range tc.suites {
				assert.Equal(t, params, got[s].Params)
				assert.Contains(t, got[s].Name, "custom ")
			}
		})
	}
	p, _ := customProblems(m, drv, map[string]string{"shape": "8x8x8", "param": "beta0=1"})
	assert.Equal(t, "custom 8x8x8 param=beta0=1", p["gemm"].Name)
}

func TestRunCustomProblemIsRecordedBesideTheBuiltIns(t *testing.T) {
	root := newCourse(t, testManifest+"custom_flags:\n  - {name: n, help: {en: the size}, sets: [n]}\n")
	out, err := Run(t.Context(), Options{Root: root, Lab: "99", Backend: "fake", Variants: []string{"lib", "good"},
		Custom: map[string]string{"n": "777"}, Worker: testWorker})
	require.NoError(t, err)
	require.Len(t, out.Results.Entries, 2)
	for _, e := range out.Results.Entries {
		assert.Equal(t, "custom n=777", e.Problem)
		assert.True(t, e.Custom)
		assert.Equal(t, "ok", e.Status, e.Error)
		assert.Equal(t, int64(777), e.Params["n"])
	}
	// A later built-in run keeps the custom entries.
	_, err = Run(t.Context(), Options{Root: root, Lab: "99", Backend: "fake", Variants: []string{"good"}, Quick: true, Worker: testWorker})
	require.NoError(t, err)
	saved, err := results.Load(out.Path)
	require.NoError(t, err)
	assert.NotNil(t, saved.Find("scale", "good", "custom n=777"))
	assert.NotNil(t, saved.Find("scale", "good", "small"))
}
