package site

import (
	"fmt"
	"html/template"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/results"
)

type headlineRow struct {
	Device, DeviceHref string
	Emulated           bool
	Lines              []string
}

type labCard struct {
	Num, Title, Summary, Href string
	Headlines                 []headlineRow
}

type devItem struct {
	Name, Href, Arch, Backend, Labs string
	Emulated                        bool
}

func (b *builder) indexPage(lang string) []error {
	_, body, err := b.renderMarkdownPage("index", lang)
	if err != nil {
		return []error{err}
	}
	// The page's text goes around the list of chapters, split at the marker comment.
	intro, outro, _ := strings.Cut(body, "<!-- chapters -->")
	rel := path.Join(lang, "index.html")
	dir := path.Dir(rel)
	var cards []labCard
	for _, ch := range b.c.chapters {
		card := labCard{Num: ch.Num, Title: ch.Title[lang], Summary: ch.Summary[lang]}
		if ch.Ready {
			card.Href = b.rel(dir, path.Join(lang, "labs", ch.Name+".html"))
		}
		for _, dr := range ch.Results {
			d := b.c.bySlug[dr.Slug]
			lines := b.headlines(lang, ch, dr, 3)
			if len(lines) == 0 {
				continue
			}
			card.Headlines = append(card.Headlines, headlineRow{Device: d.Name, Emulated: d.Emulated, Lines: lines,
				DeviceHref: b.rel(dir, path.Join(lang, "devices", d.Slug+".html"))})
		}
		cards = append(cards, card)
	}
	p := b.newPage(lang, "index", rel, tr(lang, "course"), "")
	p.Data = map[string]any{"Intro": template.HTML(intro), "Outro": template.HTML(outro), "Labs": cards,
		"Devices": b.deviceItems(lang, dir)}
	if err := b.renderPage(rel, p); err != nil {
		return []error{err}
	}
	return nil
}

func (b *builder) deviceItems(lang, dir string) []devItem {
	var out []devItem
	for _, d := range b.c.devices {
		var labs []string
		for _, ch := range b.c.chapters {
			if d.Files[ch.Name] != nil {
				labs = append(labs, ch.Num)
			}
		}
		for name := range d.Files {
			if b.c.chapter(name) == nil {
				labs = append(labs, name)
			}
		}
		arch := d.Latest.Device.Arch()
		if d.Emulated {
			arch = "–"
		}
		out = append(out, devItem{Name: d.Name, Emulated: d.Emulated, Arch: arch, Backend: d.Latest.Device.Backend,
			Href: b.rel(dir, path.Join(lang, "devices", d.Slug+".html")), Labs: strings.Join(labs, ", ")})
	}
	return out
}

// headlines summarise a lab's results on a device: per suite, the best result of the course's own
// kernels — never a library call (cuBLAS, NCCL, the driver's copy), which is what they are compared
// against — with the problem and the speedup over the baseline measured in the same run. A
// bandwidth figure whose working set fits in the device's L2 is not a memory-bandwidth headline.
// On the emulator, how many checks passed.
func (b *builder) headlines(lang string, ch *chapter, dr *devResults, max int) []string {
	entries := dr.File.Entries
	if b.c.bySlug[dr.Slug].Emulated || ch.Manifest == nil {
		ok, total := 0, 0
		for _, e := range entries {
			if e.Status == results.StatusSkipped {
				continue
			}
			total++
			if e.OK() {
				ok++
			}
		}
		if total == 0 {
			return nil
		}
		return []string{tr(lang, "checksok", ok, total)}
	}
	var lines []string
	for _, s := range ch.Manifest.Suites {
		sel := &selection{suite: s}
		es := sel.entries(dr)
		var best *results.Entry
		bestV := 0.0
		better := func(e *results.Entry, v float64, higher bool) bool {
			return best == nil || (higher && v > bestV) || (!higher && v < bestV)
		}
		l2 := dr.File.Device.L2Bytes
		for _, e := range es {
			if !e.OK() || e.Custom {
				continue
			}
			if v := s.Variant(e.Variant); v == nil || !v.IsKernel() {
				continue // a library call is the yardstick, not the course's result
			}
			if s.Metric == "gbps" && l2 > 0 && e.Params["bytes"] > 0 && e.Params["bytes"] <= l2 {
				continue // fits in L2: cache bandwidth, not memory bandwidth
			}
			v, higher := metricValue(e, s.Metric)
			if v > 0 && better(e, v, higher) {
				best, bestV = e, v
			}
		}
		if best == nil {
			continue
		}
		title := pick(lang, s.Title)
		if title == "" {
			title = s.Name
		}
		val := fmtSig(bestV) + " " + metricUnit(s.Metric)
		line := tr(lang, "best", title, best.Variant, val, problemLabel(lang, s, best.Problem))
		if best.Variant != s.Baseline && best.Speedup > 0 {
			line += tr(lang, "bestvs", best.Speedup, s.Baseline)
		}
		lines = append(lines, strings.TrimSpace(line))
		if len(lines) == max {
			break
		}
	}
	return lines
}

type kv struct{ Key, Value string }

type deviceLab struct {
	Num, Title, Href, Meta string
	Lines                  []string
}

func (b *builder) devicePages(lang string) []error {
	var errs []error
	rel := path.Join(lang, "devices", "index.html")
	p := b.newPage(lang, "devices", rel, tr(lang, "devices"), "")
	p.Data = map[string]any{"Devices": b.deviceItems(lang, path.Dir(rel))}
	if err := b.renderPage(rel, p); err != nil {
		errs = append(errs, err)
	}
	for _, d := range b.c.devices {
		rel := path.Join(lang, "devices", d.Slug+".html")
		dir := path.Dir(rel)
		p := b.newPage(lang, "device", rel, d.Name, "")
		data := map[string]any{"Emulated": d.Emulated, "Identity": b.identity(lang, d)}
		// No lab is preferred here: the device page shows whichever lab recorded them.
		if m, dr := b.ceilings(d.Slug, ""); m != nil {
			h, err := execTemplate("ceilings", ceilingsTable(lang, m, b.manifestOf(dr)))
			if err != nil {
				errs = append(errs, err)
			}
			data["Ceilings"] = h
		}
		if parts := b.propertyParts(lang, d, "", propertyParts); len(parts) > 0 {
			h, err := execTemplate("properties", parts)
			if err != nil {
				errs = append(errs, err)
			}
			data["Properties"] = h
		}
		var labs []deviceLab
		names := make([]string, 0, len(d.Files))
		for n := range d.Files {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			dr := d.Files[n]
			dl := deviceLab{Num: n[:min(2, len(n))], Title: n}
			if ch := b.c.chapter(n); ch != nil {
				dl.Title = ch.Title[lang]
				if ch.Ready {
					dl.Href = b.rel(dir, path.Join(lang, "labs", ch.Name+".html"))
				}
				dl.Lines = b.headlines(lang, ch, dr, 8)
			}
			dl.Meta = tr(lang, "ranon", dr.File.Time.UTC().Format("2006-01-02 15:04 MST"), dr.File.Toolchain.Compiler, dr.File.Toolchain.Version)
			if dr.File.Commit != "" {
				dl.Meta += " · " + shortCommit(dr.File.Commit)
			}
			labs = append(labs, dl)
		}
		data["Labs"] = labs
		p.Data = data
		if err := b.renderPage(rel, p); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func shortCommit(c string) string {
	if len(c) > 10 {
		return c[:10]
	}
	return c
}

// identity is the device's identity table, from its most recent results file.
func (b *builder) identity(L string, d *device) []kv {
	info := d.Latest.Device
	var out []kv
	add := func(key, val string) {
		if val != "" && val != "0" && val != "–" {
			out = append(out, kv{tr(L, key), val})
		}
	}
	add("devname", info.Name)
	if n := results.WorldSize(d.Latest, d.Slug); n > 1 {
		add("worldsize", strconv.Itoa(n))
	}
	add("backend", info.Backend)
	if !d.Emulated && info.ComputeMajor > 0 {
		add("cc", fmt.Sprintf("%d.%d (%s)", info.ComputeMajor, info.ComputeMinor, info.Arch()))
	}
	if info.SMs > 0 {
		add("sms", strconv.Itoa(info.SMs))
	}
	add("memory", fmtBytes(info.MemoryBytes))
	add("l2", fmtBytes(info.L2Bytes))
	if info.SMClockKHz > 0 {
		add("clocks", fmt.Sprintf("%d MHz / %d MHz", info.SMClockKHz/1000, info.MemClockKHz/1000))
	}
	if info.MemBusWidthBits > 0 {
		add("buswidth", fmt.Sprintf("%d bit", info.MemBusWidthBits))
	}
	if info.MaxThreadsPerBlock > 0 {
		add("limits", fmt.Sprintf("%d threads, %s shared (%s opt-in), warp %d", info.MaxThreadsPerBlock,
			fmtBytes(int64(info.MaxSharedPerBlock)), fmtBytes(int64(info.MaxSharedOptin)), info.WarpSize))
	}
	add("driver", info.DriverVersion)
	add("runtime", info.RuntimeVersion)
	if tc := d.Latest.Toolchain; tc.Compiler != "" {
		add("toolchain", strings.TrimSpace(tc.Compiler+" "+tc.Version+" "+tc.Arch))
	}
	add("lastrun", d.Latest.Time.UTC().Format("2006-01-02 15:04 MST"))
	add("slug", "results/"+d.Slug+"/")
	return out
}
