package grouped_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
	grouped "github.com/kernel-labs/kernellabs/labs/03_grouped_gemm"
)

// The floor counts the weights of the experts with rows only, and each ok variant's time over it.
func TestFloorsOf(t *testing.T) {
	oneToken := map[string]int64{"experts": 8, "tokens": 2, "empty": 6, "n": 1024, "k": 512}
	explicit := map[string]int64{"g": 3, "m0": 0, "m1": 4, "m2": 1, "n": 256, "k": 128}
	entries := []lab.EntryView{
		{Suite: "bf16_decode", Variant: "decode_stream", Problem: "one token", Params: oneToken, OK: true, PerOpUs: 2.5},
		{Suite: "bf16_decode", Variant: "wgmma_moe", Problem: "one token", Params: oneToken, OK: true, PerOpUs: 5},
		{Suite: "bf16_decode", Variant: "broken", Problem: "one token", Params: oneToken, OK: false, PerOpUs: 1},
		{Suite: "bf16_moe", Variant: "decode_stream", Problem: "explicit", Params: explicit, OK: true, PerOpUs: 1},
		{Suite: "fp32", Variant: "persistent", Problem: "explicit", Params: explicit, OK: true, PerOpUs: 1},
	}
	fl := grouped.FloorsOf(entries, 2000) // 2000 GB/s: 2000 bytes a nanosecond
	require.Len(t, fl.Suites, 2, "bf16 suites only")
	f := fl.Suites["bf16_decode"]["one token"]
	require.NotNil(t, f)
	assert.Equal(t, 2, f.Experts)
	assert.Equal(t, float64(2*2*512*1024), f.WeightBytes)
	assert.InDelta(t, f.WeightBytes/2000/1e3, f.Us, 1e-9)
	assert.Equal(t, map[string]float64{"decode_stream": 2.5 / f.Us, "wgmma_moe": 5 / f.Us}, f.OverFloor, "failed entries have no ratio")
	g := fl.Suites["bf16_moe"]["explicit"]
	require.NotNil(t, g)
	assert.Equal(t, 2, g.Experts, "the empty group's weights are not read")
	assert.Equal(t, float64(2*2*128*256), g.WeightBytes)
}
