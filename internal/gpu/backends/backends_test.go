package backends

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

type testCompiler struct{}

func (testCompiler) Family() string { return "test-cc" }
func (testCompiler) Build(_ context.Context, r toolchain.Request) (toolchain.Artifact, error) {
	return toolchain.Artifact{Path: r.Source}, nil
}
func (testCompiler) Version() (string, error) { return "1", nil }

type testRules struct{}

func (testRules) SkipReason(dev gpu.DeviceInfo, req Requirements) string {
	return TooFewDevices(dev, req, "")
}
func (testRules) Target(gpu.DeviceInfo, []string) string { return "t" }
func (testRules) BuildFlags(gpu.DeviceInfo) []string     { return nil }

func TestRegisterAndLookup(t *testing.T) {
	_, err := Lookup("nosuch-backend")
	assert.ErrorContains(t, err, `backend "nosuch-backend" is not registered`)

	assert.Panics(t, func() { Register(Registration{Name: "incomplete"}) }, "a registration without its parts is refused")

	Register(Registration{Name: "test-backend", Open: func() (gpu.Backend, error) { return nil, gpu.ErrNoDevice },
		Compiler: testCompiler{}, Rules: testRules{}})
	reg, err := Lookup("test-backend")
	require.NoError(t, err)
	assert.Equal(t, "test-cc", reg.Compiler.Family())
	assert.Contains(t, gpu.Backends(), "test-backend", "the runtime is registered with gpu.Open too")
	var names []string
	for _, r := range All() {
		names = append(names, r.Name)
	}
	assert.Contains(t, names, "test-backend")
}

func TestTooFewDevices(t *testing.T) {
	dev := gpu.DeviceInfo{Backend: "x"}
	for _, tc := range []struct {
		req  Requirements
		hint string
		want string
	}{
		{Requirements{Devices: 2, Available: 1}, "", "needs 2 devices at once; the x backend has 1 from device 0"},
		{Requirements{Devices: 4, Available: 2, First: 1}, "more: --n 4", "needs 4 devices at once; the x backend has 2 from device 1 (more: --n 4)"},
		{Requirements{Devices: 2, Available: 2}, "", ""},
		{Requirements{Devices: 2}, "", ""}, // the run's device count is unknown
		{Requirements{Available: 1}, "", ""},
	} {
		assert.Equal(t, tc.want, TooFewDevices(dev, tc.req, tc.hint), "%+v", tc.req)
	}
}

// A run whose backend does not open is told how to use the others that say how, unless the
// error already names their flag.
func TestInstead(t *testing.T) {
	Register(Registration{Name: "test-instead", Open: func() (gpu.Backend, error) { return nil, gpu.ErrNoDevice },
		Compiler: testCompiler{}, Rules: testRules{}, Instead: "use --backend test-instead"})
	assert.Equal(t, "use --backend test-instead", Instead("nosuch", errors.New("no such backend")))
	assert.Empty(t, Instead("nosuch", errors.New("not installed; run with --backend test-instead")))
	assert.Empty(t, Instead("test-instead", errors.New("it failed itself")))
}
