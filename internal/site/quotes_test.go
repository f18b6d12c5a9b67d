package site

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/profile"
)

// withText puts text after the "Measured ceilings" heading of both languages of the fixture's lab 01.
func withText(t *testing.T, root, en, zh string) {
	t.Helper()
	for lang, text := range map[string]string{"en": en, "zh": zh} {
		p := filepath.Join(root, "labs", "01_device_props", "notes."+lang+".md")
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		head := map[string]string{"en": "## Measured ceilings\n", "zh": "## 实测上限\n"}[lang]
		require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(data), head, head+"\n"+text+"\n", 1)), 0o644))
	}
}

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

func TestProfileCell(t *testing.T) {
	root := fixture(t)
	info := gpu.DeviceInfo{Backend: "cuda", Name: "Synthetic GPU"}
	m := func(v float64, unit string) profile.Metric { return profile.Metric{Value: v, Unit: unit} }
	f := &profile.File{Lab: "01_device_props", Device: info, Tool: "Nsight Compute 2025.3.1", Time: time.Now().UTC(),
		Profiles: []profile.Profile{
			{Suite: "hbm_bandwidth", Variant: "copy_f4", Problem: "1 GiB", Kernel: "copy_f4", Kind: profile.KindMemory,
				Metrics: map[string]profile.Metric{
					"gpu__time_duration.sum":                                                   m(268672, "ns"),
					"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed":                   m(81.45, "%"),
					"launch__registers_per_thread":                                             m(32, "register/thread"),
					"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": m(340.9, "inst"),
				}},
		}}
	_, err := profile.Save(profile.PathFor(root, info, "01_device_props"), f)
	require.NoError(t, err)
	cell := "```kl-profile\nvariants: [copy_f4]\nproblem: 1 GiB\n```"
	withText(t, root, cell+"\n\nThe copy reaches `=81.5% ~ profile hbm_bandwidth/copy_f4/1 GiB gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed` of DRAM.",
		cell+"\n\n拷贝达到 DRAM 的 `=81.5% ~ profile hbm_bandwidth/copy_f4/1 GiB gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed`。")
	_, out, err := build(t, root, true)
	require.NoError(t, err)
	en, zh := read(t, out, "en/labs/01_device_props.html"), read(t, out, "zh/labs/01_device_props.html")
	for _, want := range []string{"cell-profile", "DRAM throughput (% of peak)", "81.5%", "268.7 µs", "long_scoreboard 340.9", "Registers per thread"} {
		assert.Contains(t, en, want)
	}
	assert.Contains(t, zh, "每线程寄存器数")
	assert.NotContains(t, en, "L2 hit rate", "rows that no column has are left out")

	// A variant the lab lacks is an error; one without a profile says how to record it.
	for cell, want := range map[string]string{
		"```kl-profile\nvariants: [copy_f9]\n```":                      "copy_f9",
		"```kl-profile\n```":                                           "kl-profile needs variants",
		"```kl-profile\nvariants: [copy_f4]\nrows: [vibes]\n```":       `row "vibes" is not one of`,
		"```kl-profile\nvariants: [copy_f4]\ndevice: nvidia-b200\n```": "device nvidia-b200 has no profile",
	} {
		root := fixture(t)
		withText(t, root, cell, cell)
		_, _, err := build(t, root, false)
		require.Error(t, err, cell)
		assert.Contains(t, err.Error(), want)
	}
	root = fixture(t)
	withText(t, root, "```kl-profile\nvariants: [copy_f32]\n```", "```kl-profile\nvariants: [copy_f32]\n```")
	_, out, err = build(t, root, true)
	require.NoError(t, err)
	assert.Contains(t, read(t, out, "en/labs/01_device_props.html"), "labrun profile 01 --variant copy_f32")
}
