package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// Every recorded device description and ceilings summary reads into the typed records and back
// without losing a field or a value: the types are the schema of what the files hold. (A file
// written by an older lab may lack a field the types have.)
func TestTypedRecordsReadTheRecordedFilesLosslessly(t *testing.T) {
	files, err := filepath.Glob("../../results/*/*.json")
	require.NoError(t, err)
	seen := 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		var f File
		require.NoError(t, json.Unmarshal(data, &f), path)
		_, hasProps := f.Extra["info"]
		_, hasCeilings := f.Extra["hbm_gbps"]
		if !hasProps && !hasCeilings {
			continue
		}
		require.True(t, hasProps && hasCeilings, "%s: a device description without a ceilings summary, or the reverse", path)
		seen++
		var p DeviceProperties
		var c DeviceCeilings
		decodeInto(t, f.Extra, &p)
		decodeInto(t, f.Extra, &c)
		typed, err := ExtraOf(p)
		require.NoError(t, err)
		summary, err := ExtraOf(c)
		require.NoError(t, err)
		for k, v := range summary {
			typed[k] = v
		}
		var back map[string]any // typed, as a file would hold it
		data, _ = json.Marshal(typed)
		require.NoError(t, json.Unmarshal(data, &back))
		assertKept(t, path, "", f.Extra, back)
	}
	assert.Positive(t, seen, "no results file holds a device description")
}

// assertKept fails for every value of want that got lacks or holds differently.
func assertKept(t *testing.T, path, at string, want, got any) {
	t.Helper()
	if w, ok := want.(map[string]any); ok {
		g, ok := got.(map[string]any)
		if !assert.True(t, ok, "%s: %s is no longer an object", path, at) {
			return
		}
		for k, v := range w {
			if _, has := g[k]; !assert.True(t, has, "%s: %s%s is lost", path, at, k) {
				continue
			}
			assertKept(t, path, at+k+".", v, g[k])
		}
		return
	}
	assert.Equal(t, want, got, "%s: %s", path, at)
}

// decodeInto reads extra data into a typed record, as a reader of results files does.
func decodeInto(t *testing.T, extra map[string]any, into any) {
	t.Helper()
	data, err := json.Marshal(extra)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, into))
}

func TestExtraOfIsOneEntryPerField(t *testing.T) {
	extra, err := ExtraOf(DeviceProperties{Info: gpu.DeviceInfo{Name: "x"}, NVML: NVML{Reason: "none here"}})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"info", "peaks", "nvml"}, keysOf(extra), "absent parts are left out")
	var p DeviceProperties
	decodeInto(t, extra, &p)
	assert.Equal(t, "x", p.Info.Name)
	assert.Equal(t, "none here", p.NVML.Reason)
	_, err = ExtraOf([]int{1})
	assert.Error(t, err, "only a record with fields makes extra data")
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestRidgeOf(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	r := RidgeOf(Ceiling{Measured: f(700), Peak: f(989)}, Ceiling{Measured: f(4000), Peak: nil})
	require.NotNil(t, r.Measured)
	assert.InDelta(t, 700e12/4000e9, *r.Measured, 1e-9)
	assert.Nil(t, r.Peak)
	assert.Nil(t, RidgeOf(Ceiling{Measured: f(1)}, Ceiling{Measured: f(0)}).Measured, "no ridge over a zero bandwidth")
}
