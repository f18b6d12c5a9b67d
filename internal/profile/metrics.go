package profile

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Kind is the kind of kernel a profile is for; it picks the sections ncu collects and the rows a
// chapter shows by default.
type Kind string

const (
	KindMemory  Kind = "memory"  // bandwidth-bound: copies, GEMV, decode (a suite timed in GB/s)
	KindCompute Kind = "compute" // arithmetic-bound: GEMM, FMA chains (TFLOP/s)
	KindLatency Kind = "latency" // launch latency: what the launch cost, little else
)

// KindFor picks the kind from a suite's headline metric ("gbps", "tflops", "us").
func KindFor(metric string) Kind {
	switch metric {
	case "gbps":
		return KindMemory
	case "us":
		return KindLatency
	}
	return KindCompute
}

// ParseKind reads --kind.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(s); k {
	case KindMemory, KindCompute, KindLatency:
		return k, nil
	}
	return "", fmt.Errorf("unknown kind %q: memory, compute or latency", s)
}

// Sections are ncu's section identifiers for the kind (ncu --list-sections names them). Sections,
// not single metric names: ncu refuses a whole run for one metric name a version does not know,
// while a section brings whatever metrics this version and GPU have for it.
func (k Kind) Sections() []string {
	base := []string{"SpeedOfLight", "LaunchStats", "Occupancy"}
	switch k {
	case KindMemory:
		return append(base, "MemoryWorkloadAnalysis", "MemoryWorkloadAnalysis_Tables", "WarpStateStats", "InstructionStats")
	case KindLatency:
		return base
	}
	return append(base, "MemoryWorkloadAnalysis", "MemoryWorkloadAnalysis_Tables", "ComputeWorkloadAnalysis",
		"WarpStateStats", "SchedulerStats", "InstructionStats")
}

// curated are the metrics a profile keeps, out of the hundreds ncu's raw page prints: throughput
// as % of peak, occupancy and its limits, resources, shared-memory bank conflicts, cache hit rates,
// warp stall reasons, instructions, pipe utilisation. Patterns, because the exact set differs
// between ncu versions and GPUs (Hopper adds stall reasons and tensor pipes).
var curated = []*regexp.Regexp{
	regexp.MustCompile(`^gpu__time_duration\.sum$`),
	regexp.MustCompile(`^sm__throughput\.avg\.pct_of_peak_sustained_elapsed$`),
	regexp.MustCompile(`^gpu__compute_memory_throughput\.avg\.pct_of_peak_sustained_elapsed$`),
	regexp.MustCompile(`^(gpu__)?dram_{0,2}throughput\.avg\.pct_of_peak_sustained_elapsed$`),
	regexp.MustCompile(`^lts__throughput\.avg\.pct_of_peak_sustained_elapsed$`),
	regexp.MustCompile(`^l1tex__throughput\.avg\.pct_of_peak_sustained_active$`),
	regexp.MustCompile(`^dram__bytes(_read|_write)?\.sum(\.per_second)?$`),
	regexp.MustCompile(`^lts__t_sector_hit_rate\.pct$`),
	regexp.MustCompile(`^l1tex__t_sector_hit_rate\.pct$`),
	regexp.MustCompile(`^lts__t_bytes\.sum(\.per_second)?$`),
	regexp.MustCompile(`^sm__warps_active\.avg\.pct_of_peak_sustained_active$`),
	regexp.MustCompile(`^sm__maximum_warps_per_active_cycle_pct$`),
	regexp.MustCompile(`^launch__occupancy_limit_(blocks|registers|shared_mem|warps|barriers)$`),
	regexp.MustCompile(`^launch__(registers_per_thread|block_size|grid_size|thread_count|waves_per_multiprocessor)$`),
	regexp.MustCompile(`^launch__shared_mem_(per_block_static|per_block_dynamic|per_block|config_size)$`),
	regexp.MustCompile(`^l1tex__data_bank_conflicts_pipe_lsu_mem_shared(_op_ld|_op_st)?\.sum$`),
	regexp.MustCompile(`^l1tex__data_pipe_lsu_wavefronts_mem_shared(_op_ld|_op_st)?\.sum$`),
	regexp.MustCompile(`^smsp__sass_inst_executed_op_shared_(ld|st)\.sum$`),
	regexp.MustCompile(`^smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active\.ratio$`),
	regexp.MustCompile(`^smsp__average_warp_latency_per_inst_issued\.ratio$`),
	regexp.MustCompile(`^smsp__(inst_executed|inst_issued)\.sum$`),
	regexp.MustCompile(`^smsp__issue_active\.avg\.pct_of_peak_sustained_active$`),
	regexp.MustCompile(`^sm__pipe_[a-z0-9_]+_cycles_active\.avg\.pct_of_peak_sustained_active$`),
	regexp.MustCompile(`^sm__inst_executed_pipe_[a-z0-9_]+\.avg\.pct_of_peak_sustained_active$`),
}

// Curate keeps the metrics a profile records.
func Curate(all map[string]Metric) map[string]Metric {
	out := map[string]Metric{}
	for name, m := range all {
		for _, re := range curated {
			if re.MatchString(name) {
				out[name] = m
				break
			}
		}
	}
	return out
}

// Stall is one warp stall reason: warps stalled for it per issued instruction.
type Stall struct {
	Reason string  // "long_scoreboard", "barrier", "gmma"...
	Ratio  float64 // ncu's smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio
}

var stallRE = regexp.MustCompile(`^smsp__average_warps_issue_stalled_([a-z_]+)_per_issue_active\.ratio$`)

// TopStalls returns the n largest stall reasons, largest first. "selected" (a warp being issued)
// is no stall and is left out.
func TopStalls(m map[string]Metric, n int) []Stall {
	var st []Stall
	for name, v := range m {
		if g := stallRE.FindStringSubmatch(name); g != nil && g[1] != "selected" && v.Text == "" && v.Value > 0 {
			st = append(st, Stall{Reason: g[1], Ratio: v.Value})
		}
	}
	sort.Slice(st, func(i, j int) bool {
		if st[i].Ratio != st[j].Ratio {
			return st[i].Ratio > st[j].Ratio
		}
		return st[i].Reason < st[j].Reason
	})
	if len(st) > n {
		st = st[:n]
	}
	return st
}

// OccupancyLimiter names the resource that bounds blocks per SM (the smallest of ncu's
// launch__occupancy_limit_* values) and that bound; ok is false when the profile lacks them.
func OccupancyLimiter(m map[string]Metric) (resource string, blocks float64, ok bool) {
	for _, r := range []string{"registers", "shared_mem", "warps", "blocks", "barriers"} {
		v, has := m["launch__occupancy_limit_"+r]
		if !has || v.Text != "" {
			continue
		}
		if !ok || v.Value < blocks {
			resource, blocks, ok = r, v.Value, true
		}
	}
	return resource, blocks, ok
}

// TensorPipe returns the busiest tensor-core pipe's utilisation (% of peak, active cycles) and its
// name; ok is false when the profile has no tensor pipe metric.
func TensorPipe(m map[string]Metric) (pipe string, pct float64, ok bool) {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := m[name]
		if !strings.HasPrefix(name, "sm__pipe_") || !strings.Contains(name, "tensor") || v.Text != "" {
			continue
		}
		if !ok || v.Value > pct {
			pipe = strings.TrimSuffix(strings.TrimPrefix(name, "sm__pipe_"), "_cycles_active.avg.pct_of_peak_sustained_active")
			pct, ok = v.Value, true
		}
	}
	return pipe, pct, ok
}

// DRAMThroughput names the DRAM throughput metric the profile has (ncu's name changed between
// versions: dram__ or gpu__dram__).
func DRAMThroughput(p Profile) string {
	for _, n := range []string{"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "dram__throughput.avg.pct_of_peak_sustained_elapsed"} {
		if _, ok := p.Metrics[n]; ok {
			return n
		}
	}
	return "dram__throughput.avg.pct_of_peak_sustained_elapsed"
}

// unitScale converts ncu's units (base units with --print-units base; scaled ones otherwise) to
// seconds, bytes or plain counts.
var unitScale = map[string]float64{
	"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, // ncu 2025 with --print-units base
	"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1,
	"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
	"byte/s": 1, "Kbyte/s": 1e3, "Mbyte/s": 1e6, "Gbyte/s": 1e9, "Tbyte/s": 1e12,
	"byte/second": 1, "Kbyte/second": 1e3, "Mbyte/second": 1e6, "Gbyte/second": 1e9, "Tbyte/second": 1e12,
}

// Base returns the value in seconds, bytes or bytes per second where the unit is one of those, else
// as recorded.
func (m Metric) Base() float64 {
	if s, ok := unitScale[m.Unit]; ok {
		return m.Value * s
	}
	return m.Value
}
