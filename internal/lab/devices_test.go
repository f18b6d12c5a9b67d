package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/results"
)

const twoDeviceManifest = `id: "99"
title: {en: Two devices, zh: 两个设备}
devices: 2
suites:
  - name: pair
    metric: us
    variants: [{name: k, file: k.cu, entry: scale_good}]
    problems:
      gpu: [{name: one, n: 1}]
`

// pairDriver checks that every device and its kernel reach the driver.
type pairDriver struct{}

type pairCase struct{ env *Env }

func (pairDriver) Prepare(env *Env, s *Suite, p Problem) (Case, error) {
	if len(env.Devices) != 2 || len(env.Streams) != 2 {
		return nil, fmt.Errorf("got %d devices and %d streams", len(env.Devices), len(env.Streams))
	}
	for i := range env.Devices {
		if _, err := env.KernelOn(i, s.Variant("k")); err != nil {
			return nil, err
		}
	}
	if _, err := env.KernelOn(2, s.Variant("k")); err == nil {
		return nil, fmt.Errorf("device 2 does not exist")
	}
	return &pairCase{env}, nil
}
func (c *pairCase) Run(v *Variant) error { return nil }
func (c *pairCase) Work() Work           { return Work{} }
func (c *pairCase) Check(v *Variant, _ *Outputs) (check.Report, error) {
	return check.Report{OK: true, Method: "devices seen"}, nil
}

func init() { RegisterDriver("99_pair", pairDriver{}) }

func TestLabOnTwoDevices(t *testing.T) {
	root := newCourse(t, twoDeviceManifest)
	renameLab(t, root, "99_pair")
	t.Setenv("LABRUN_FAKE_DEVICES", "2")
	out, err := Run(t.Context(), Options{Root: root, Lab: "99", Backend: "fake", Worker: testWorker, NoSave: true})
	require.NoError(t, err)
	require.Len(t, out.Results.Entries, 1)
	assert.Equal(t, results.StatusOK, out.Results.Entries[0].Status, out.Results.Entries[0].Error)

	t.Setenv("LABRUN_FAKE_DEVICES", "1")
	out, err = Run(t.Context(), Options{Root: root, Lab: "99", Backend: "fake", Worker: testWorker, NoSave: true})
	require.NoError(t, err)
	require.Len(t, out.Results.Entries, 1)
	assert.Equal(t, results.StatusSkipped, out.Results.Entries[0].Status)
	assert.Contains(t, out.Results.Entries[0].Error, "needs 2 devices at once")
}

// renameLab moves newCourse's lab folder (99_test) to name, for a test whose driver is
// registered under that name.
func renameLab(t *testing.T, root, name string) {
	t.Helper()
	require.NoError(t, os.Rename(filepath.Join(root, "labs", "99_test"), filepath.Join(root, "labs", name)))
}
