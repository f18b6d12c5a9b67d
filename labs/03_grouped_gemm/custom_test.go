package grouped

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

func TestParseCustom(t *testing.T) {
	moe := &lab.Suite{Name: "moe", Problems: lab.ProblemSet{GPU: []lab.Problem{{Params: map[string]int64{"experts": 8, "tokens": 64, "n": 8, "k": 8}}}}}
	plain := &lab.Suite{Name: "fp32", Problems: lab.ProblemSet{GPU: []lab.Problem{{Params: map[string]int64{"g": 4, "m0": 8}}}}}
	p, err := Lab{}.ParseCustom(moe, map[string]string{"experts": "128", "tokens": "zipf:17480", "k": "7168", "n": "2048"})
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"experts": 128, "tokens": 17480, "dist": DistZipf, "k": 7168, "n": 2048}, p.Params)

	p, err = Lab{}.ParseCustom(moe, map[string]string{"experts": "8", "tokens": "zipf1.5:100", "k": "64", "n": "64", "param": "empty=2"})
	require.NoError(t, err)
	assert.Equal(t, int64(150), p.Params["skew"])
	assert.Equal(t, int64(2), p.Params["empty"])

	p, err = Lab{}.ParseCustom(moe, map[string]string{"experts": "8", "tokens": "1Ki", "k": "64", "n": "64"})
	require.NoError(t, err)
	assert.Equal(t, int64(DistUniform), p.Params["dist"])
	assert.Equal(t, int64(1024), p.Params["tokens"])

	for flags, want := range map[string]map[string]string{
		"missing --k":         {"experts": "8", "tokens": "64", "n": "8"},
		"uniform:N, zipf:N":   {"experts": "8", "tokens": "gauss:64", "n": "8", "k": "8"},
		"is not an integer":   {"experts": "eight", "tokens": "64", "n": "8", "k": "8"},
		"must be 1..":         {"experts": "0", "tokens": "64", "n": "8", "k": "8"},
		"write key=value":     {"experts": "8", "tokens": "64", "n": "8", "k": "8", "param": "empty"},
		"Zipf exponent \"x\"": {"experts": "8", "tokens": "zipfx:64", "n": "8", "k": "8"},
	} {
		_, err := Lab{}.ParseCustom(moe, want)
		require.Error(t, err, flags)
		assert.Contains(t, err.Error(), flags)
	}
	_, err = Lab{}.ParseCustom(plain, map[string]string{"experts": "8"})
	var na *lab.NotApplicable
	assert.ErrorAs(t, err, &na)
	_, err = Lab{}.ParseCustom(moe, map[string]string{"shape": "1x2x3"})
	assert.ErrorAs(t, err, &na)
}
