package site

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/profile"
)

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
	_, out := built(t, root, true)
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
	_, out = built(t, root, true)
	assert.Contains(t, read(t, out, "en/labs/01_device_props.html"), "labrun profile 01 --variant copy_f32")
}
