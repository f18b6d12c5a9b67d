package site

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

func TestQuotedResults(t *testing.T) {
	for _, tc := range []struct {
		name, quote string
		want        string // "" when it matches
	}{
		{"a rate", "`=6.5 TB/s ~ hbm_bandwidth/copy_f4/16 MiB gbps`", ""},
		{"the same in the file's unit", "`=6,500 GB/s ~ hbm_bandwidth/copy_f4/16 MiB gbps`", ""},
		{"rounding of the printed digits", "`=1.07× ~ hbm_bandwidth/copy_f4/16 MiB speedup`", ""},
		{"a ratio of two entries", "`=1.97× ~ hbm_bandwidth/copy_f4/16 MiB gbps / hbm_bandwidth/copy_f4/1 GiB gbps`", ""},
		{"drifted", "`=1.10× ~ hbm_bandwidth/copy_f4/16 MiB speedup`", "does not match"},
		{"too precise to hold", "`=6.51 TB/s ~ hbm_bandwidth/copy_f4/16 MiB gbps`", "the file has 6.5000"},
		{"another dimension", "`=6.5 ms ~ hbm_bandwidth/copy_f4/16 MiB gbps`", "it is in ms, the file in GB/s"},
		{"a ceiling", "`=3.3 TB/s ~ ceiling hbm_gbps`", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fixture(t)
			withText(t, root, "Copies reach "+tc.quote+".", "拷贝达到 "+tc.quote+"。")
			_, out, err := build(t, root, true)
			if tc.want == "" {
				require.NoError(t, err)
				page := read(t, out, "en/labs/01_device_props.html")
				text := strings.TrimSpace(strings.SplitN(strings.TrimPrefix(tc.quote, "`="), "~", 2)[0])
				assert.Contains(t, page, `<span class="quoted" title="`)
				assert.Contains(t, page, ">"+text+"</span>", "the page shows the number as written")
				assert.NotContains(t, page, "~ hbm_bandwidth", "not the markup")
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "labs/01_device_props/notes.en.md:")
		})
	}
}

func TestQuotedResultErrors(t *testing.T) {
	for quote, want := range map[string]string{
		"`=6.5 TB/s`": "names no source",
		"`=6.5 TB/s ~ hbm_bandwidth/copy_f9/16 MiB gbps`":              "has no entry hbm_bandwidth/copy_f9/16 MiB",
		"`=6.5 TB/s ~ hbm_bandwidth/copy_f4/16 MiB glops`":             "no field glops",
		"`=6.5 TB/s ~ copy_f4 gbps`":                                   "SUITE/VARIANT/PROBLEM",
		"`=6.5 TB/s ~ ceiling smem_gbps`":                              "no ceiling smem_gbps",
		"`=6.5 TB/s ~ hbm_bandwidth/copy_f4/16 MiB gbps @nvidia-b200`": "device nvidia-b200 has no results",
	} {
		t.Run(quote, func(t *testing.T) {
			root := fixture(t)
			withText(t, root, "x "+quote, "x "+quote)
			_, _, err := build(t, root, false)
			require.Error(t, err, "a source that does not exist fails any build")
			assert.Contains(t, err.Error(), want)
		})
	}
	// The languages quote the same sources.
	root := fixture(t)
	withText(t, root, "`=6.5 TB/s ~ hbm_bandwidth/copy_f4/16 MiB gbps`", "`=3.3 TB/s ~ hbm_bandwidth/copy_f4/1 GiB gbps`")
	_, _, err := build(t, root, true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "quoted result 1 differs between languages")
}

// A weight-read floor that a lab's Derive recorded (lab.ReadFloorKey) is quoted by suite and
// problem; a problem without one is an error.
func TestQuotedFloors(t *testing.T) {
	for quote, want := range map[string]string{
		"`=10 µs ~ floor hbm_bandwidth/16 MiB floor_us`":                                      "",
		"`=1.25× ~ floor hbm_bandwidth/16 MiB over_floor.copy_f4`":                            "",
		"`=0.5× ~ floor hbm_bandwidth/16 MiB floor_us / floor hbm_bandwidth/16 MiB floor_us`": "does not match",
		"`=10 µs ~ floor hbm_bandwidth/1 GiB floor_us`":                                       "the results record no floor of that problem",
		"`=10 µs ~ floor hbm_bandwidth floor_us`":                                             "write floor SUITE/PROBLEM FIELD",
	} {
		t.Run(quote, func(t *testing.T) {
			root := fixture(t)
			editFile(t, root, "results/synthetic-gpu/01_device_props.json", func(s string) string {
				return strings.Replace(s, `"entries"`, `"extra": {"`+lab.ReadFloorKey+`": {"hbm_gbps": 3300, "suites": {"hbm_bandwidth": {"16 MiB": `+
					`{"weight_bytes": 33000000, "floor_us": 10, "over_floor": {"copy_f4": 1.25}}}}}}, "entries"`, 1)
			})
			withText(t, root, "x "+quote, "x "+quote)
			_, _, err := build(t, root, true)
			if want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}
