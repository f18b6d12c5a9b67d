package site

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/gomarkdown/markdown/ast"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/profile"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// Quoted results: a number in the prose that comes from a results file is written as an inline
// code span that starts with "=", the number as the reader sees it, "~", and where it comes from:
//
//	`=8.84 TB/s ~ l2_bandwidth/l2_read/16 MiB gbps`                 an entry's field
//	`=2.08× ~ l2_bandwidth/l2_read/16 MiB gbps / ceiling hbm_gbps`  a ratio of two
//	`=108 registers ~ 02:bf16/wgmma_bf16/4096³ kernel.num_regs`     another lab's entry
//	`=98.5% ~ profile fp32_fma/fma_chains1/2048 threads per SM sm__warps_active.avg.pct_of_peak_sustained_active`
//	`=69.0% ~ profile fp32/tiled_loop/4 squares 512…4096#3 sm__pipe_fma_cycles_active...` launch 3
//	`=4.25 TB/s ~ ceiling hbm_gbps`                                 a lab's measured ceilings
//	`=157 ~ ceiling ridge.bf16_flop_per_byte`                       and its ridge points
//	`=884 µs ~ floor bf16_moe/DeepSeek-V3 128 experts, 7168→2048, uniform floor_us`  a weight-read floor
//	                                        (lab.ReadFloors: floor_us, weight_bytes, over_floor.VARIANT)
//
// A reference may end in @DEVICE (default: the first GPU with results of that lab). The page
// shows the number as written; the build checks it against the file within the rounding of its
// printed digits, converting units of the same kind (TB/s against a field in GB/s, µs against
// ms), and fails a strict build when it does not match — so that prose cannot drift from the
// measurements. Fields are the results file's JSON names (gbps, tflops, speedup, per_op_us,
// time.median_ms, kernel.num_regs, ...); profile metrics are ncu's names.

var quoteNumRE = regexp.MustCompile(`[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[-+]?\d+(?:\.\d+)?`)

// quoteUnits: a unit's dimension and its size in that dimension's base.
var quoteUnits = map[string]struct {
	dim   string
	scale float64
}{
	"B/s": {"bw", 1}, "byte/s": {"bw", 1}, "KB/s": {"bw", 1e3}, "MB/s": {"bw", 1e6}, "GB/s": {"bw", 1e9}, "TB/s": {"bw", 1e12},
	"GFLOP/s": {"flops", 1e9}, "TFLOP/s": {"flops", 1e12}, "PFLOP/s": {"flops", 1e15},
	"s": {"time", 1}, "ms": {"time", 1e-3}, "µs": {"time", 1e-6}, "us": {"time", 1e-6}, "ns": {"time", 1e-9},
	"×": {"ratio", 1}, "x": {"ratio", 1}, "%": {"pct", 1},
	"B": {"bytes", 1}, "byte": {"bytes", 1}, "KiB": {"bytes", 1024}, "MiB": {"bytes", 1 << 20}, "GiB": {"bytes", 1 << 30},
}

// fieldUnits are the units of a results entry's fields.
var fieldUnits = map[string]string{"gbps": "GB/s", "tflops": "TFLOP/s", "per_op_us": "µs", "speedup": "×",
	"time.median_ms": "ms", "time.min_ms": "ms", "time.max_ms": "ms", "time.mean_ms": "ms"}

type quote struct {
	text string // as the reader sees it
	ref  string // after "~"
	node *ast.Code
	line int
}

// findQuotes lists the quoted results of a notes file.
func findQuotes(d *notesDoc) []*quote {
	var qs []*quote
	ast.WalkFunc(d.doc, func(n ast.Node, entering bool) ast.WalkStatus {
		c, ok := n.(*ast.Code)
		if !entering || !ok || !strings.HasPrefix(string(c.Literal), "=") {
			return ast.GoToNext
		}
		lit := string(c.Literal)
		q := &quote{node: c, line: d.lineOfText("`" + lit)}
		if i := strings.Index(lit, "~"); i > 0 {
			q.text, q.ref = strings.TrimSpace(lit[1:i]), strings.TrimSpace(lit[i+1:])
		} else {
			q.text = strings.TrimSpace(lit[1:])
		}
		qs = append(qs, q)
		return ast.GoToNext
	})
	return qs
}

// renderQuotes checks every quoted result of a page and puts the number in place of the markup.
func (b *builder) renderQuotes(pc *pageCtx) []error {
	var errs []error
	for _, q := range findQuotes(pc.doc) {
		if q.ref == "" {
			errs = append(errs, pc.doc.errAt(q.line, "quoted result %q names no source: write `=TEXT ~ SUITE/VARIANT/PROBLEM FIELD`", q.text))
			continue
		}
		val, unit, where, err := b.quoteValue(pc, q.ref)
		if err != nil {
			errs = append(errs, pc.doc.errAt(q.line, "quoted result %q: %v", q.text, err))
			continue
		}
		if err := matchQuote(q.text, val, unit); err != nil {
			b.c.warn(true, "%s:%d: quoted result %q does not match %s: %v", pc.doc.Rel, q.line, q.text, where, err)
		}
		title := fmt.Sprintf("%s = %s %s", where, strconv.FormatFloat(val, 'g', 6, 64), unit)
		h, err := execTemplate("quoted", struct{ Title, Text string }{title, q.text})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		span := &ast.HTMLSpan{}
		span.Literal = []byte(h)
		replaceNode(q.node, span)
	}
	return errs
}

var _ = defineTemplates(`{{define "quoted"}}<span class="quoted" title="{{.Title}}">{{.Text}}</span>{{end}}`)

func replaceNode(old, new ast.Node) {
	parent := old.GetParent()
	if parent == nil {
		return
	}
	kids := parent.GetChildren()
	for i, k := range kids {
		if k == old {
			kids[i] = new
			new.SetParent(parent)
		}
	}
	parent.SetChildren(kids)
}

// quoteValue resolves a reference to its value and unit, and says where it was read.
func (b *builder) quoteValue(pc *pageCtx, ref string) (float64, string, string, error) {
	if parts := strings.Split(ref, " / "); len(parts) == 2 {
		a, ua, wa, err := b.quoteValue(pc, parts[0])
		if err != nil {
			return 0, "", "", err
		}
		c, uc, wc, err := b.quoteValue(pc, parts[1])
		if err != nil {
			return 0, "", "", err
		}
		if c == 0 {
			return 0, "", "", fmt.Errorf("%s is 0", wc)
		}
		ka, kc := quoteUnits[ua], quoteUnits[uc]
		if ka.dim != kc.dim {
			return 0, "", "", fmt.Errorf("a ratio of %s and %s", ua, uc)
		}
		sa, sc := max(ka.scale, 1e-300), max(kc.scale, 1e-300)
		if ua == "" {
			sa, sc = 1, 1
		}
		return a * sa / (c * sc), "×", wa + " / " + wc, nil
	}
	device := ""
	if i := strings.LastIndex(ref, " @"); i >= 0 {
		ref, device = strings.TrimSpace(ref[:i]), strings.TrimSpace(ref[i+2:])
	}
	kind := "entry"
	for _, k := range []string{"profile ", "ceiling ", "floor "} {
		if strings.HasPrefix(ref, k) {
			kind, ref = strings.TrimSpace(k), strings.TrimSpace(ref[len(k):])
		}
	}
	if kind == "ceiling" {
		return b.quoteCeiling(pc, ref, device)
	}
	i := strings.LastIndex(ref, " ")
	if i < 0 {
		return 0, "", "", fmt.Errorf("%q: write SUITE/VARIANT/PROBLEM FIELD", ref)
	}
	path, field := ref[:i], ref[i+1:]
	ch := pc.ch
	if j := strings.Index(path, ":"); j == 2 {
		if ch = b.chapterNum(path[:2]); ch == nil {
			return 0, "", "", fmt.Errorf("no lab %s", path[:2])
		}
		path = path[3:]
	}
	if kind == "floor" {
		return quoteFloor(ch, path, field, device)
	}
	p := strings.SplitN(path, "/", 3)
	if len(p) != 3 {
		return 0, "", "", fmt.Errorf("%q: the source is SUITE/VARIANT/PROBLEM", path)
	}
	if kind == "profile" {
		return b.quoteProfile(ch, p[0], p[1], p[2], field, device)
	}
	dr, err := pickDevice(ch, device)
	if err != nil {
		return 0, "", "", err
	}
	e := dr.File.Find(p[0], p[1], p[2])
	if e == nil {
		return 0, "", "", fmt.Errorf("results/%s/%s.json has no entry %s", dr.Slug, ch.Name, path)
	}
	v, err := jsonField(e, field)
	where := fmt.Sprintf("results/%s/%s.json %s %s", dr.Slug, ch.Name, path, field)
	return v, fieldUnits[field], where, err
}

// quoteFloor reads a field of a problem's weight-read floor, SUITE/PROBLEM, from the extra data
// of the lab's results (lab.ReadFloorKey).
func quoteFloor(ch *chapter, path, field, device string) (float64, string, string, error) {
	dr, err := pickDevice(ch, device)
	if err != nil {
		return 0, "", "", err
	}
	where := fmt.Sprintf("results/%s/%s.json %s %s %s", dr.Slug, ch.Name, lab.ReadFloorKey, path, field)
	suite, problem, ok := strings.Cut(path, "/")
	raw, has := dr.File.Extra[lab.ReadFloorKey]
	if !ok || !has {
		return 0, "", "", fmt.Errorf("%s: no such floor (write floor SUITE/PROBLEM FIELD)", where)
	}
	data, _ := json.Marshal(raw)
	var fl lab.ReadFloors
	if err := json.Unmarshal(data, &fl); err != nil {
		return 0, "", "", fmt.Errorf("%s: %w", where, err)
	}
	f := fl.Suites[suite][problem]
	if f == nil {
		return 0, "", "", fmt.Errorf("%s: the results record no floor of that problem", where)
	}
	v, err := jsonField(f, field)
	unit := map[string]string{"floor_us": "µs", "weight_bytes": "B"}[field]
	if strings.HasPrefix(field, "over_floor.") {
		unit = "×"
	}
	return v, unit, where, err
}

func (b *builder) chapterNum(num string) *chapter {
	for _, ch := range b.c.chapters {
		if ch.Num == num {
			return ch
		}
	}
	return nil
}

// pickDevice is the device named, else the first GPU (not the emulator) with results of the lab.
func pickDevice(ch *chapter, device string) (*devResults, error) {
	for _, dr := range ch.Results {
		if (device == "" && !dr.File.Device.Emulated) || dr.Slug == device {
			return dr, nil
		}
	}
	if device == "" {
		return nil, fmt.Errorf("no GPU has results of %s", ch.Name)
	}
	return nil, fmt.Errorf("device %s has no results of %s", device, ch.Name)
}

// jsonField reads a field of a value by its JSON path ("gbps", "kernel.num_regs").
func jsonField(v any, path string) (float64, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	var cur any
	_ = json.Unmarshal(data, &cur)
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0, fmt.Errorf("no field %s", path)
		}
		if cur, ok = m[k]; !ok {
			return 0, fmt.Errorf("no field %s", path)
		}
	}
	f, ok := cur.(float64)
	if !ok {
		return 0, fmt.Errorf("field %s is not a number", path)
	}
	return f, nil
}

// quoteCeiling reads a measured ceiling from whichever lab's results record it (the site knows
// no lab by name): the first chapter, in course order, whose results on the device have the key.
func (b *builder) quoteCeiling(pc *pageCtx, key, device string) (float64, string, string, error) {
	var tried []string
	for _, ch := range b.c.chapters {
		dr, err := pickDevice(ch, device)
		if err != nil {
			continue
		}
		var cur any = dr.File.Extra
		for _, k := range strings.Split(key, ".") { // "hbm_gbps", "ridge.bf16_flop_per_byte"
			m, _ := cur.(map[string]any)
			cur = m[k]
		}
		c, ok := results.DecodeCeiling(cur)
		if !ok {
			tried = append(tried, ch.Name)
			continue
		}
		if c.Measured == nil {
			return 0, "", "", fmt.Errorf("ceiling %s was not measured on %s (results of %s)", key, dr.Slug, ch.Name)
		}
		m, unit := *c.Measured, c.Unit
		if unit == "us" {
			unit = "µs"
		}
		return m, unit, fmt.Sprintf("results/%s/%s.json ceiling %s", dr.Slug, ch.Name, key), nil
	}
	where := "a GPU"
	if device != "" {
		where = device
	}
	if len(tried) == 0 {
		return 0, "", "", fmt.Errorf("no ceiling %s: no lab has results on %s", key, where)
	}
	return 0, "", "", fmt.Errorf("no ceiling %s in the labs' results on %s (looked in %s)", key, where, strings.Join(tried, ", "))
}

func (b *builder) quoteProfile(ch *chapter, suite, variant, problem, metric, device string) (float64, string, string, error) {
	launch := 0 // "PROBLEM#3": the fourth profiled launch of the variant (a loop of launches)
	if i := strings.LastIndex(problem, "#"); i > 0 {
		n, err := strconv.Atoi(problem[i+1:])
		if err != nil {
			return 0, "", "", fmt.Errorf("%q: after # comes the launch's number", problem)
		}
		problem, launch = problem[:i], n
	}
	files, errs := profile.LoadAll(b.c.root, ch.Name)
	if len(errs) > 0 {
		return 0, "", "", errs[0]
	}
	for _, f := range files {
		slug := results.DeviceSlug(f.Device)
		if device != "" && slug != device || device == "" && f.Device.Emulated {
			continue
		}
		for _, p := range f.Profiles {
			if p.Suite == suite && p.Variant == variant && p.Problem == problem && p.Launch == launch {
				m, ok := p.Metrics[metric]
				if !ok || m.Text != "" {
					return 0, "", "", fmt.Errorf("the profile of %s/%s/%s has no metric %s", suite, variant, problem, metric)
				}
				unit := m.Unit
				if k, ok := quoteUnits[unit]; ok && k.dim == "time" {
					return m.Base(), "s", fmt.Sprintf("results/%s/%s.profile.json %s/%s/%s %s", slug, ch.Name, suite, variant, problem, metric), nil
				}
				return m.Value, unit, fmt.Sprintf("results/%s/%s.profile.json %s/%s/%s %s", slug, ch.Name, suite, variant, problem, metric), nil
			}
		}
	}
	return 0, "", "", fmt.Errorf("no profile of %s/%s/%s for %s (labrun profile %s --variant %s)", suite, variant, problem, ch.Name, ch.Num, variant)
}

// matchQuote checks that text shows value (in unit) to the precision it prints.
func matchQuote(text string, value float64, unit string) error {
	loc := quoteNumRE.FindStringIndex(text)
	if loc == nil {
		return fmt.Errorf("the quote has no number")
	}
	numText := strings.ReplaceAll(text[loc[0]:loc[1]], ",", "")
	shown, _ := strconv.ParseFloat(numText, 64)
	decimals := 0
	if i := strings.IndexByte(numText, '.'); i >= 0 {
		decimals = len(numText) - i - 1
	}
	half := 0.5 * math.Pow(10, -float64(decimals))
	rest := strings.TrimSpace(text[loc[1]:])
	textUnit := ""
	for u := range quoteUnits {
		if strings.HasPrefix(rest, u) && len(u) > len(textUnit) && (len(rest) == len(u) || !isLetter(rest[len(u)])) {
			textUnit = u
		}
	}
	want := value
	if tu, ok := quoteUnits[textUnit]; ok && textUnit != "" {
		fu, fok := quoteUnits[unit]
		switch {
		case fok && fu.dim == tu.dim:
			want = value * fu.scale / tu.scale
		case unit == "" || !fok:
			// a plain count or a unit the file does not know: compare as is
		default:
			return fmt.Errorf("it is in %s, the file in %s", textUnit, unit)
		}
	}
	if math.Abs(shown-want) > half*1.000001+1e-12 {
		return fmt.Errorf("the file has %s (%s %s), the prose %s", strconv.FormatFloat(want, 'f', decimals+2, 64),
			strconv.FormatFloat(value, 'g', 6, 64), unit, numText)
	}
	return nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// quoteParity says where the quoted results of two languages differ: the same sources, in order.
func quoteParity(en, zh *notesDoc) []error {
	a, z := findQuotes(en), findQuotes(zh)
	if len(a) != len(z) {
		return []error{fmt.Errorf("%s quotes %d results and %s %d: both languages quote the same", en.Rel, len(a), zh.Rel, len(z))}
	}
	for i := range a {
		if a[i].ref != z[i].ref {
			return []error{fmt.Errorf("quoted result %d differs between languages: %s:%d %q and %s:%d %q",
				i+1, en.Rel, a[i].line, a[i].ref, zh.Rel, z[i].line, z[i].ref)}
		}
	}
	return nil
}
