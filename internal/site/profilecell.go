package site

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/profile"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The kl-profile cell: what Nsight Compute measured for some variants (labrun profile), as a
// compact table, one column per variant, beside the kernel it explains.
//
//	```kl-profile
//	variants: [vectorized, bank_conflict_free]   # one column each
//	suite: fp32              # optional: when a variant is in several suites
//	problem: 4096³           # optional: the problem profiled (default: the first recorded)
//	device: nvidia-h200      # optional: default every device with profiles of the lab
//	rows: [conflicts, stalls] # optional: default the rows for the kind of kernel
//	```

type profileSpec struct {
	Variants []string `yaml:"variants" json:"variants"`
	Suite    string   `yaml:"suite" json:"suite,omitempty"`
	Problem  string   `yaml:"problem" json:"problem,omitempty"`
	Device   string   `yaml:"device" json:"device,omitempty"`
	Rows     []string `yaml:"rows" json:"rows,omitempty"`
}

// check: a profile table names its variants (the columns), and rows it knows.
func (s *profileSpec) check(d *notesDoc, c *cell) error {
	if len(s.Variants) == 0 {
		return d.errAt(c.Line, "kl-profile needs variants: [..] (the columns of the table)")
	}
	for _, r := range s.Rows {
		if _, ok := profileRowByKey(r); !ok {
			return d.errAt(c.Line, "kl-profile: row %q is not one of %s", r, strings.Join(profileRowKeys(), ", "))
		}
	}
	return nil
}

// profileRow is one line of the table: a label in both languages and how to read it from a profile.
type profileRow struct {
	key    string
	en, zh string
	value  func(lang string, p *profile.Profile) (string, bool)
}

func metric(name string) func(p *profile.Profile) (profile.Metric, bool) {
	return func(p *profile.Profile) (profile.Metric, bool) {
		m, ok := p.Metrics[name]
		return m, ok && m.Text == ""
	}
}

func pct(name string) func(string, *profile.Profile) (string, bool) {
	return func(_ string, p *profile.Profile) (string, bool) {
		m, ok := metric(name)(p)
		return fmt.Sprintf("%.1f%%", m.Value), ok
	}
}

var profileRows = []profileRow{
	{"duration", "Duration", "耗时", func(_ string, p *profile.Profile) (string, bool) {
		m, ok := metric("gpu__time_duration.sum")(p)
		return fmtTime(m.Base() * 1e3), ok
	}},
	{"sm", "SM throughput (% of peak)", "SM 吞吐（占峰值）", pct("sm__throughput.avg.pct_of_peak_sustained_elapsed")},
	{"dram", "DRAM throughput (% of peak)", "DRAM 吞吐（占峰值）", func(l string, p *profile.Profile) (string, bool) {
		return pct(profile.DRAMThroughput(*p))(l, p)
	}},
	{"dram_bw", "DRAM bandwidth achieved", "DRAM 实际带宽", func(_ string, p *profile.Profile) (string, bool) {
		m, ok := metric("dram__bytes.sum.per_second")(p)
		return fmt.Sprintf("%s GB/s", fmtSig(m.Base()/1e9)), ok
	}},
	{"l2", "L2 throughput (% of peak)", "L2 吞吐（占峰值）", pct("lts__throughput.avg.pct_of_peak_sustained_elapsed")},
	{"l2_hit", "L2 hit rate", "L2 命中率", pct("lts__t_sector_hit_rate.pct")},
	{"occupancy", "Achieved occupancy (theoretical)", "实际占用率（理论值）", func(_ string, p *profile.Profile) (string, bool) {
		a, ok := metric("sm__warps_active.avg.pct_of_peak_sustained_active")(p)
		if !ok {
			return "", false
		}
		if t, ok := metric("sm__maximum_warps_per_active_cycle_pct")(p); ok {
			return fmt.Sprintf("%.1f%% (%.0f%%)", a.Value, t.Value), true
		}
		return fmt.Sprintf("%.1f%%", a.Value), true
	}},
	{"limiter", "Blocks per SM, and what limits them", "每个 SM 的块数及其限制因素", func(lang string, p *profile.Profile) (string, bool) {
		res, blocks, ok := profile.OccupancyLimiter(p.Metrics)
		if !ok {
			return "", false
		}
		names := map[string][2]string{"registers": {"registers", "寄存器"}, "shared_mem": {"shared memory", "共享内存"},
			"warps": {"warps", "warp 数"}, "blocks": {"blocks", "块数"}, "barriers": {"barriers", "屏障数"}}
		n := names[res][0]
		if lang == "zh" {
			n = names[res][1]
		}
		return fmt.Sprintf("%.0f (%s)", blocks, n), true
	}},
	{"registers", "Registers per thread", "每线程寄存器数", func(_ string, p *profile.Profile) (string, bool) {
		m, ok := metric("launch__registers_per_thread")(p)
		return fmt.Sprintf("%.0f", m.Value), ok
	}},
	{"smem", "Shared memory per block", "每块共享内存", func(_ string, p *profile.Profile) (string, bool) {
		st, ok1 := metric("launch__shared_mem_per_block_static")(p)
		dy, ok2 := metric("launch__shared_mem_per_block_dynamic")(p)
		return fmtBytesKiB(st.Value + dy.Value), ok1 || ok2
	}},
	{"conflicts", "Shared-memory bank conflicts (load / store)", "共享内存 bank 冲突（读 / 写）", func(_ string, p *profile.Profile) (string, bool) {
		ld, ok1 := metric("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")(p)
		st, ok2 := metric("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")(p)
		return fmtCount(ld.Value) + " / " + fmtCount(st.Value), ok1 && ok2
	}},
	{"stalls", "Top warp stalls (per issued instruction)", "主要 warp 停顿原因（每条发射指令）", func(_ string, p *profile.Profile) (string, bool) {
		st := profile.TopStalls(p.Metrics, 3)
		var parts []string
		for _, s := range st {
			parts = append(parts, fmt.Sprintf("%s %.1f", s.Reason, s.Ratio))
		}
		return strings.Join(parts, ", "), len(parts) > 0
	}},
	{"fma_pipe", "FMA pipe busy", "FMA 流水线占用", pct("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active")},
	{"tensor_pipe", "Tensor pipe busy", "张量核心流水线占用", pct("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active")},
	{"issued", "Instructions issued", "发射的指令数", func(_ string, p *profile.Profile) (string, bool) {
		m, ok := metric("smsp__inst_issued.sum")(p)
		return fmtCount(m.Value), ok
	}},
}

// defaultRows are the rows shown for each kind of kernel when the cell names none.
var defaultRows = map[profile.Kind][]string{
	profile.KindMemory: {"duration", "dram", "dram_bw", "l2", "l2_hit", "occupancy", "registers", "stalls", "issued"},
	profile.KindCompute: {"duration", "sm", "dram", "l2", "l2_hit", "occupancy", "limiter", "registers", "smem",
		"conflicts", "stalls", "fma_pipe", "tensor_pipe", "issued"},
	profile.KindLatency: {"duration", "occupancy", "registers"},
}

func profileRowByKey(k string) (profileRow, bool) {
	for _, r := range profileRows {
		if r.key == k {
			return r, true
		}
	}
	return profileRow{}, false
}

func profileRowKeys() []string {
	var ks []string
	for _, r := range profileRows {
		ks = append(ks, r.key)
	}
	return ks
}

func fmtCount(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func fmtBytesKiB(v float64) string {
	if v < 1024 {
		return fmt.Sprintf("%.0f B", v)
	}
	return fmt.Sprintf("%s KiB", fmtSig(v/1024))
}

// profilesOf reads the profile files of a chapter, one per device.
func (b *builder) profilesOf(ch *chapter) ([]*profile.File, []error) {
	return profile.LoadAll(b.c.root, ch.Name)
}

func (b *builder) profileCell(pc *pageCtx, c *cell, s *profileSpec) (string, error) {
	d, m, L := pc.doc, pc.ch.Manifest, pc.lang
	// Every variant must exist, in the suite named when the cell names one.
	for _, v := range s.Variants {
		if _, err := findVariant(m, s.Suite, v); err != nil {
			return "", d.errAt(c.Line, "kl-profile: %v", err)
		}
	}
	files, errs := b.profilesOf(pc.ch)
	if len(errs) > 0 {
		return "", d.errAt(c.Line, "kl-profile: %v", errs[0])
	}
	v := profileView{Variants: strings.Join(s.Variants, " "), Caption: profileCaption.get(L)}
	shown := 0
	for _, f := range files {
		slug := results.DeviceSlug(f.Device)
		if s.Device != "" && slug != s.Device {
			continue
		}
		cols := make([]*profile.Profile, len(s.Variants))
		found := 0
		for i, v := range s.Variants {
			for j := range f.Profiles {
				p := &f.Profiles[j]
				if p.Variant == v && (s.Suite == "" || p.Suite == s.Suite) && (s.Problem == "" || p.Problem == s.Problem) && p.Launch == 0 {
					cols[i] = p
					found++
					break
				}
			}
		}
		if found == 0 {
			continue
		}
		if found < len(s.Variants) {
			var missing []string
			for i, p := range cols {
				if p == nil {
					missing = append(missing, s.Variants[i])
				}
			}
			b.c.warn(true, "%s:%d: kl-profile: %s has no profile of %s on %s (record it with labrun profile %s --variant %s)",
				d.Rel, c.Line, filepath.Base(profile.PathFor(b.c.root, f.Device, pc.ch.Name)), strings.Join(missing, ", "),
				slug, pc.ch.Num, strings.Join(missing, ","))
		}
		shown++
		v.Tables = append(v.Tables, b.profileTable(pc, f, slug, cols, s))
	}
	if shown == 0 {
		if s.Device != "" {
			return "", d.errAt(c.Line, "kl-profile: device %s has no profile of %s", s.Device, strings.Join(s.Variants, ", "))
		}
		v.Empty = emptyCell(noProfiles(pc.ch.Num, s.Variants).get(L))
	}
	return execCell("kl-profile", v)
}

var _ = defineTemplates(`
{{- define "kl-profile"}}<figure class="cell cell-profile" data-variants="{{.Variants}}"><figcaption>{{.Caption}}</figcaption>
{{- range .Tables}}<p class="device-head"><a href="{{.Href}}">{{.Device}}</a> <span class="meta">{{.Meta}}</span></p>
{{- /**/ -}}
<div class="table-scroll"><table class="results profile"><thead><tr><th></th>
{{- range .Cols}}{{if .Variant}}<th class="num" title="{{.Command}}">{{.Variant}}<br><span class="meta">{{.Meta}}</span></th>{{else}}<th class="num">{{.Missing}}</th>{{end}}{{end -}}
</tr></thead><tbody>
{{range .Rows}}<tr><th scope="row">{{.Label}}</th>{{range .Values}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}</tbody></table></div>
{{end}}
{{- with .Empty}}{{template "empty" .}}{{end}}</figure>
{{end}}`)

// profileView is a profile cell (the "kl-profile" template): a table per device.
type profileView struct {
	Variants, Caption string
	Tables            []profileTableView
	Empty             emptyMsg
}

type profileTableView struct {
	Href, Device, Meta string
	Cols               []profileCol
	Rows               []profileTableRow
}

// profileCol heads a variant's column: the profiled kernel and problem, or only the name of a
// variant without a profile.
type profileCol struct {
	Variant, Command, Meta string
	Missing                string
}

type profileTableRow struct {
	Label  string
	Values []string
}

var profileCaption = langText("Nsight Compute (labrun profile)", "Nsight Compute 测量结果（labrun profile）")

func noProfiles(num string, variants []string) langPair {
	cmd := fmt.Sprintf("labrun profile %s --variant %s", num, strings.Join(variants, ","))
	return langText("No profile recorded yet: run `"+cmd+"` on a GPU.", "尚无性能剖析记录：在 GPU 上运行 `"+cmd+"`。")
}

func (b *builder) profileTable(pc *pageCtx, f *profile.File, slug string, cols []*profile.Profile, s *profileSpec) profileTableView {
	L := pc.lang
	t := profileTableView{Href: b.rel(pc.pageDir, L+"/devices/"+slug+".html"), Device: f.Device.Name,
		Meta: f.Tool + " · " + f.Time.UTC().Format("2006-01-02")}
	var kind profile.Kind
	for i, p := range cols {
		if p == nil {
			t.Cols = append(t.Cols, profileCol{Missing: s.Variants[i]})
			continue
		}
		if kind == "" {
			kind = p.Kind
		}
		problem := problemLabelIn(L, pc.ch.Manifest, p.Problem)
		if suite := pc.ch.Manifest.Suite(p.Suite); suite != nil {
			problem = problemLabel(L, suite, p.Problem)
		}
		t.Cols = append(t.Cols, profileCol{Variant: p.Variant, Command: p.Command, Meta: p.Kernel + " · " + problem})
	}
	keys := s.Rows
	if len(keys) == 0 {
		keys = defaultRows[kind]
	}
	for _, k := range keys {
		r, _ := profileRowByKey(k)
		cells := make([]string, len(cols))
		any := false
		for i, p := range cols {
			cells[i] = "–"
			if p == nil {
				continue
			}
			if v, ok := r.value(L, p); ok {
				cells[i], any = v, true
			}
		}
		if !any {
			continue // a row no column has (a tensor pipe on a CUDA-core kernel)
		}
		label := r.en
		if L == "zh" {
			label = r.zh
		}
		t.Rows = append(t.Rows, profileTableRow{Label: label, Values: cells})
	}
	return t
}

// langPair is a short text in both languages that the cell files keep beside their code.
type langPair struct{ en, zh string }

func langText(en, zh string) langPair { return langPair{en, zh} }

func (p langPair) get(lang string) string {
	if lang == "zh" {
		return p.zh
	}
	return p.en
}
