package profile

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readLog(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return b
}

// parseSgemmLog parses a log of ncu profiling sgemm_smem (testdata/NAME): it must hold this
// many launches, the first of them sgemm_smem's, in blocks of 32×32.
func parseSgemmLog(t *testing.T, name string, launches int) (*Report, Launch) {
	t.Helper()
	rep, err := ParseLog(readLog(t, name))
	require.NoError(t, err)
	require.Len(t, rep.Launches, launches)
	l := rep.Launches[0]
	assert.Equal(t, "sgemm_smem", l.Kernel)
	assert.Equal(t, "(32, 32, 1)", l.Block)
	return rep, l
}

func TestParseLogTwoKernels(t *testing.T) {
	rep, l := parseSgemmLog(t, "ncu_two_kernels.log", 2)
	assert.Equal(t, "(128, 128, 1)", l.Grid)
	assert.Equal(t, "9.0", l.CC)
	// Thousands separators are read as such, units come from the second row.
	assert.Equal(t, Metric{Value: 1843296, Unit: "nsecond"}, l.Metrics["gpu__time_duration.sum"])
	assert.InDelta(t, 1.843296e-3, l.Metrics["gpu__time_duration.sum"].Base(), 1e-12)
	assert.Equal(t, 134217728.0, l.Metrics["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"].Value)
	assert.Equal(t, "register/thread", l.Metrics["launch__registers_per_thread"].Unit)
	assert.Equal(t, "NVIDIA H200", l.Metrics["device__attribute_display_name"].Text, "text stays text")
	_, launchCol := l.Metrics["Kernel Name"]
	assert.False(t, launchCol, "launch columns are not metrics")

	b := rep.Launches[1]
	assert.Equal(t, 1, b.ID)
	assert.Equal(t, "sgemm_smem_swizzle", b.Kernel)
	assert.Equal(t, 0.0, b.Metrics["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"].Value)
	assert.Len(t, rep.Messages, 4)
}

func TestParseLogErrors(t *testing.T) {
	for _, tc := range []struct {
		log      string
		kind     error
		launches int
		says     string
	}{
		{"ncu_permission.log", ErrPermission, 0, "NVreg_RestrictProfilingToAdminUsers"},
		{"ncu_replay.log", ErrReplay, 1, "Failed to profile \"gemm_wgmma_tma\""},
		{"ncu_nokernel.log", ErrNoKernel, 0, "--kernel REGEX"},
		{"ncu_no_section.log", ErrProfiler, 0, "MemoryWorkloadAnalysis_Tables"},
	} {
		t.Run(tc.log, func(t *testing.T) {
			rep, err := ParseLog(readLog(t, tc.log))
			require.Error(t, err)
			assert.True(t, errors.Is(err, tc.kind), "%v", err)
			assert.Contains(t, err.Error(), tc.says)
			require.NotNil(t, rep)
			assert.Len(t, rep.Launches, tc.launches, "launches profiled before the error are kept")
		})
	}
}

func TestParseLogMalformed(t *testing.T) {
	for name, log := range map[string]string{
		"no units row":     "\"ID\",\"Kernel Name\",\"sm__throughput.avg.pct_of_peak_sustained_elapsed\"\n",
		"short row":        "\"ID\",\"Kernel Name\",\"x__y.sum\"\n\"\",\"\",\"\"\n\"0\",\"k\"\n",
		"not the raw page": "\"ID\",\"Section Name\",\"Metric Name\"\n\"\",\"\",\"\"\n",
		"units do not fit": "\"ID\",\"Kernel Name\",\"x__y.sum\"\n\"\",\"\"\n",
		"broken quoting":   "\"ID\",\"Kernel Name\",\"x__y.sum\"\n\"\",\"\",\"\"\n\"0\",\"k,\"1\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseLog([]byte(log))
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrProfiler), "%v", err)
		})
	}
}

func TestParseValue(t *testing.T) {
	for in, want := range map[string]Metric{
		"1,234,567.5": {Value: 1234567.5, Unit: "byte"},
		"92.11":       {Value: 92.11, Unit: "byte"},
		"-3":          {Value: -3, Unit: "byte"},
		"n/a":         {Text: "n/a", Unit: "byte"},
		"(256, 1, 1)": {Text: "(256, 1, 1)", Unit: "byte"},
		"1,5":         {Text: "1,5", Unit: "byte"}, // not a thousands grouping: left as text
	} {
		assert.Equal(t, want, parseValue(in, "byte"), in)
	}
}

func TestCurateAndDerived(t *testing.T) {
	rep, err := ParseLog(readLog(t, "ncu_two_kernels.log"))
	require.NoError(t, err)
	m := Curate(rep.Launches[0].Metrics)
	assert.Contains(t, m, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")
	assert.Contains(t, m, "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio")
	assert.NotContains(t, m, "device__attribute_display_name")

	st := TopStalls(m, 2)
	require.Len(t, st, 2)
	assert.Equal(t, "barrier", st[0].Reason)
	assert.Equal(t, 11.63, st[0].Ratio)
	assert.Equal(t, "mio_throttle", st[1].Reason, "selected is not a stall")

	res, blocks, ok := OccupancyLimiter(m)
	require.True(t, ok)
	assert.Equal(t, "registers", res)
	assert.Equal(t, 2.0, blocks)

	pipe, pct, ok := TensorPipe(m)
	require.True(t, ok)
	assert.Equal(t, "tensor_op_gmma", pipe)
	assert.Equal(t, 0.0, pct)
	assert.Equal(t, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", DRAMThroughput(Profile{Metrics: m}))
}

func TestInvocationArgs(t *testing.T) {
	iv := Invocation{NCU: "ncu", LogFile: "/tmp/x/ncu.log", Kernel: "regex:^sgemm_smem$", Count: 1, Kind: KindMemory,
		ClockControl: "none", Target: []string{"labrun", "run", "02", "--problem", "4096×4096×4096"}}
	args := iv.Args()
	assert.Equal(t, []string{"--csv", "--page", "raw", "--print-units", "base", "--log-file", "/tmp/x/ncu.log",
		"--clock-control", "none"}, args[:9])
	assert.Contains(t, args, "MemoryWorkloadAnalysis_Tables")
	assert.NotContains(t, args, "SchedulerStats", "the memory set leaves the scheduler out")
	assert.Equal(t, []string{"--kernel-name", "regex:^sgemm_smem$", "--launch-count", "1", "labrun", "run", "02", "--problem", "4096×4096×4096"},
		args[len(args)-9:])
	assert.Contains(t, iv.CommandLine(), "'4096×4096×4096'")
	assert.Contains(t, iv.CommandLine(), "'regex:^sgemm_smem$'")
}

func TestFindNCU(t *testing.T) {
	dir := t.TempDir()
	fake := dir + "/ncu"
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755))
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvNCU {
				return v
			}
			return ""
		}
	}
	p, err := FindNCU(env(fake))
	require.NoError(t, err)
	assert.Equal(t, fake, p)
	_, err = FindNCU(env(dir + "/missing"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NCU=")

	t.Setenv("PATH", dir)
	p, err = FindNCU(env(""))
	require.NoError(t, err)
	assert.Equal(t, fake, p)
}

func TestSectionList(t *testing.T) {
	// The start of `ncu --list-sections` (2025.3).
	out := `---------------------------------- ---------------------------------- ------- ----------------------------------
Identifier                         Display Name                       Enabled Filename
---------------------------------- ---------------------------------- ------- ----------------------------------
ComputeWorkloadAnalysis            Compute Workload Analysis          no      .../sections/ComputeWorkloadAnalysis.section
LaunchStats                        Launch Statistics                  yes     .../sections/LaunchStats.section
MemoryWorkloadAnalysis             Memory Workload Analysis           no      .../sections/MemoryWorkloadAnalysis.section
Occupancy                          Occupancy                          yes     .../sections/Occupancy.section
SpeedOfLight                       GPU Speed Of Light Throughput      yes     .../sections/SpeedOfLight.section
`
	known := parseSectionList(out)
	assert.Equal(t, []string{"ComputeWorkloadAnalysis", "LaunchStats", "MemoryWorkloadAnalysis", "Occupancy", "SpeedOfLight"}, known)
	keep, missing := Available(KindMemory.Sections(), known)
	assert.Equal(t, []string{"SpeedOfLight", "LaunchStats", "Occupancy", "MemoryWorkloadAnalysis"}, keep)
	assert.Equal(t, []string{"MemoryWorkloadAnalysis_Tables", "WarpStateStats", "InstructionStats"}, missing)
	keep, missing = Available(KindLatency.Sections(), nil)
	assert.Equal(t, KindLatency.Sections(), keep, "unknown: keep all")
	assert.Empty(t, missing)
}

func TestSectionListUnreadable(t *testing.T) {
	keep, missing := Available(KindMemory.Sections(), []string{"Usage", "Options"})
	assert.Equal(t, KindMemory.Sections(), keep)
	assert.Empty(t, missing)
}

// A log that ncu 2025.3.1 wrote on the H200 (labrun profile 02 --variant smem --problem 4096³):
// 1172 columns, units such as "ns" and "byte/s", values with thousands separators, warnings.
func TestParseRealLog(t *testing.T) {
	rep, l := parseSgemmLog(t, "ncu_2025.3_h200_sgemm_smem.log", 1)
	d := l.Metrics["gpu__time_duration.sum"]
	assert.Equal(t, "ns", d.Unit)
	assert.InDelta(t, 0.01607968, d.Base(), 1e-12)
	assert.InDelta(t, 530.405428963e9, l.Metrics["dram__bytes.sum.per_second"].Base(), 1e3)
	assert.Equal(t, 22396902.0, l.Metrics["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"].Value)
	m := Curate(l.Metrics)
	assert.Equal(t, 32.0, m["launch__registers_per_thread"].Value)
	res, blocks, ok := OccupancyLimiter(m)
	require.True(t, ok)
	assert.Equal(t, "registers", res, "registers and warps both allow 2 blocks: the first named wins")
	assert.Equal(t, 2.0, blocks)
	st := TopStalls(m, 1)
	require.Len(t, st, 1)
	assert.Equal(t, Stall{Reason: "mio_throttle", Ratio: 15.89}, st[0])
	assert.Less(t, len(m), 150, "the curated set is a small part of the raw page")
	assert.NoError(t, classify(rep.Messages, 1), "ncu's warnings about clocks and inaccessible metrics are not errors")
}
