package results

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCeilingsIn(t *testing.T) {
	decode := func(s string) map[string]any {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(s), &m))
		return m
	}
	keys := func(cs []NamedCeiling) []string {
		var ks []string
		for _, c := range cs {
			ks = append(ks, c.Key)
		}
		return ks
	}
	// Top-level entries shaped like a ceiling, in the known order and then by name; the other
	// entries (device facts, a ridge pair without a unit) are not ceilings.
	extra := decode(`{"device": "X", "zeta_gbps": {"unit": "GB/s", "measured": 1},
		"l2_gbps": {"unit": "GB/s", "measured": 9000, "peak": null, "variant": "l2", "problem": "16 MiB"},
		"hbm_gbps": {"unit": "GB/s", "measured": 4000, "peak": 4800, "ratio": 0.83},
		"ridge": {"bf16_flop_per_byte": {"measured": 150, "peak": 206}},
		"alpha_us": {"unit": "us", "measured": null}}`)
	cs := CeilingsIn(extra)
	assert.Equal(t, []string{"hbm_gbps", "l2_gbps", "alpha_us", "zeta_gbps"}, keys(cs))
	hbm := FindCeiling(cs, "hbm_gbps")
	require.NotNil(t, hbm)
	assert.Equal(t, 4000.0, *hbm.Measured)
	assert.Equal(t, 4800.0, *hbm.Peak)
	assert.Equal(t, "16 MiB", FindCeiling(cs, "l2_gbps").Problem)
	assert.Nil(t, FindCeiling(cs, "alpha_us").Measured, "null: not measured")
	assert.Nil(t, FindCeiling(cs, "ridge"))

	// A "ceilings" object: its entries, objects or bare numbers.
	cs = CeilingsIn(decode(`{"ceilings": {"hbm_gbps": {"measured": 2, "source": "emulated"}, "fp32_tflops": 0.5}}`))
	assert.Equal(t, []string{"hbm_gbps", "fp32_tflops"}, keys(cs))
	assert.Equal(t, 0.5, *FindCeiling(cs, "fp32_tflops").Measured)
	assert.Equal(t, "emulated", FindCeiling(cs, "hbm_gbps").Source)

	assert.Nil(t, CeilingsIn(decode(`{"device": "X"}`)))
}
