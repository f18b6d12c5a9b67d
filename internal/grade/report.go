package grade

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// Report files written by WriteAll.
const (
	FileGradescope = "results.json"
	FileJUnit      = "junit.xml"
	FileMarkdown   = "summary.md"
	FileReport     = "report.json"
)

// Grades is the outcome of a grade of one or more labs.
type Grades struct {
	Labs []*Report
}

// Score and MaxScore add up the labs graded on this runner.
func (s *Grades) Score() (score, max float64) {
	for _, r := range s.Graded() {
		score += r.Score
		max += r.MaxScore
	}
	return round2(score), round2(max)
}

// Graded are the labs of which something was graded on this runner.
func (s *Grades) Graded() []*Report {
	var out []*Report
	for _, r := range s.Labs {
		if r.NotGraded == "" {
			out = append(out, r)
		}
	}
	return out
}

// NotGraded are the labs of which nothing could be graded on this runner (Report.NotGraded).
func (s *Grades) NotGraded() []*Report {
	var out []*Report
	for _, r := range s.Labs {
		if r.NotGraded != "" {
			out = append(out, r)
		}
	}
	return out
}

// Passed reports whether every lab graded on this runner reached its pass mark (and one was).
func (s *Grades) Passed() bool {
	g := s.Graded()
	for _, r := range g {
		if !r.Passed {
			return false
		}
	}
	return len(g) > 0
}

// passMarks says the pass mark of the graded labs: one figure when they share it.
func (s *Grades) passMarks() string {
	seen := map[float64]bool{}
	var parts []string
	for _, r := range s.Graded() {
		if !seen[r.PassMark] {
			seen[r.PassMark] = true
		}
		parts = append(parts, fmt.Sprintf("lab %s %.0f%%", r.Lab, r.PassMark*100))
	}
	if len(seen) == 1 {
		for pm := range seen {
			return fmt.Sprintf("%.0f%% of the points graded in each lab", pm*100)
		}
	}
	return strings.Join(parts, ", ") + " of the points graded there"
}

// TotalLine is the closing line of a summary: the total over the graded labs, the pass mark
// and the verdict, then the labs not graded here with the reason.
func (s *Grades) TotalLine() string {
	var b strings.Builder
	if g := s.Graded(); len(g) > 0 {
		sc, mx := s.Score()
		var names []string
		for _, r := range g {
			names = append(names, r.Lab)
		}
		verdict := "PASSED"
		if !s.Passed() {
			verdict = "NOT PASSED"
		}
		fmt.Fprintf(&b, "total %s / %s (%.0f%%) over %s; pass mark %s: %s", pts(sc), pts(mx), pct(sc, mx),
			strings.Join(names, ", "), s.passMarks(), verdict)
	} else {
		b.WriteString("nothing was graded on this runner")
	}
	for _, r := range s.NotGraded() {
		fmt.Fprintf(&b, "\nnot graded here: lab %s (%s)", r.Lab, r.NotGraded)
	}
	return b.String()
}

func pct(score, max float64) float64 {
	if max <= 0 {
		return 0
	}
	return 100 * score / max
}

func mark(status string) string {
	switch status {
	case StatusPassed:
		return "PASS"
	case StatusPartial:
		return "PART"
	case StatusNotGraded:
		return "----"
	}
	return "FAIL"
}

func pts(x float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", x), "0"), ".")
}

// WriteText writes the terminal summary: each test with its points, and under each failure what
// failed with the error figures and the first wrong elements.
func (s *Grades) WriteText(w io.Writer) {
	for _, r := range s.Labs {
		fmt.Fprintf(w, "\n== Grade of lab %s — %s\n", r.Lab, r.Title)
		kind := "GPU"
		if r.Device.Emulated {
			kind = "CPU emulator: correctness only"
		}
		fmt.Fprintf(w, "   on %s (%s); seed %d (repeat with --seed %d)", r.Device.Name, kind, r.Seed, r.Seed)
		if r.SecretSeed {
			fmt.Fprint(w, "; hidden tests use the secret seed")
		}
		fmt.Fprintln(w)
		for _, f := range r.Files {
			fmt.Fprintf(w, "   %s: %s\n", f.Exercise, f.File)
		}
		fmt.Fprintf(w, "   speed: %s\n", r.Speed)
		if !r.Device.Emulated {
			for _, rule := range r.Rules {
				if strings.HasPrefix(rule, "Speed of") {
					fmt.Fprintf(w, "   %s\n", rule)
				}
			}
		}
		for _, n := range r.Notes {
			fmt.Fprintf(w, "   note: %s\n", n)
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, t := range r.Tests {
			fmt.Fprintf(tw, "   %s\t%s\t%s\t%s\t\n", mark(t.Status), t.Name, pointsCol(t), reasonCol(t))
		}
		tw.Flush()
		for _, t := range r.Tests {
			if t.Status == StatusPassed || t.Status == StatusNotGraded || t.Output == "" {
				continue
			}
			fmt.Fprintf(w, "\n   %s — %s:\n", t.Name, strings.ToUpper(mark(t.Status)))
			for _, l := range strings.Split(t.Output, "\n") {
				fmt.Fprintf(w, "     %s\n", l)
			}
		}
		if r.NotGraded != "" {
			fmt.Fprintf(w, "\n   not graded here (%s)\n", r.NotGraded)
			continue
		}
		verdict := "PASSED"
		if !r.Passed {
			verdict = "NOT PASSED"
		}
		fmt.Fprintf(w, "\n   score %s / %s (%.0f%%), pass mark %.0f%%: %s\n", pts(r.Score), pts(r.MaxScore), pct(r.Score, r.MaxScore),
			r.PassMark*100, verdict)
	}
	fmt.Fprintf(w, "\n%s\n", s.TotalLine())
}

// pointsCol is a test's points, "–" for a test not graded here (it counts neither way).
func pointsCol(t TestResult) string {
	if t.Status == StatusNotGraded {
		return "–"
	}
	return pts(t.Score) + "/" + pts(t.MaxScore)
}

func reasonCol(t TestResult) string {
	switch t.Status {
	case StatusPassed:
		return ""
	case StatusNotGraded:
		return notGradedText(t)
	}
	if t.Reason != "" {
		return ReasonText(t.Reason)
	}
	return ""
}

// notGradedText is "not graded here", with the reason in brackets when there is one.
func notGradedText(t TestResult) string {
	if strings.HasPrefix(t.Output, "not graded here") {
		return firstLine(t.Output)
	}
	if t.Output != "" {
		return "not graded here (" + firstLine(t.Output) + ")"
	}
	return "not graded here"
}

// ---- Gradescope ----

// The Gradescope autograder results format
// (https://gradescope-autograders.readthedocs.io/en/latest/specs/#output-format): the top-level
// fields score, execution_time, output, visibility, stdout_visibility, extra_data and tests, and
// per test score, max_score, status ("passed" or "failed"), name, number, output, tags and
// visibility. Only documented fields are written (grade_test.go checks them).
type gsTest struct {
	Name       string   `json:"name"`
	Number     string   `json:"number"`
	Score      float64  `json:"score"`
	MaxScore   float64  `json:"max_score"`
	Status     string   `json:"status"`
	Output     string   `json:"output"`
	Visibility string   `json:"visibility"`
	Tags       []string `json:"tags,omitempty"`
}

type gsResults struct {
	Score            float64        `json:"score"`
	ExecutionTime    int            `json:"execution_time"`
	Output           string         `json:"output"`
	Visibility       string         `json:"visibility"`
	StdoutVisibility string         `json:"stdout_visibility"`
	ExtraData        map[string]any `json:"extra_data"`
	Tests            []gsTest       `json:"tests"`
}

// WriteGradescope writes a Gradescope autograder results.json. The score is the total of the
// labs graded on this runner; a test not graded here (speed without a GPU, a lab that needs more
// GPUs than the runner has) is not listed as a test, so that Gradescope neither fails it nor
// counts its points, and the output says which were left out and why. Hidden tests are
// "after_published". The maximum, the pass marks and each lab's figures are in extra_data.
func (s *Grades) WriteGradescope(w io.Writer) error {
	sc, mx := s.Score()
	res := gsResults{Score: sc, Visibility: "visible", StdoutVisibility: "visible", Tests: []gsTest{},
		ExtraData: map[string]any{"max_score": mx, "passed": s.Passed()}}
	var out []string
	labs := []map[string]any{}
	elapsed := 0.0
	for li, r := range s.Labs {
		elapsed += r.ElapsedS
		labs = append(labs, map[string]any{"lab": r.Lab, "score": r.Score, "max_score": r.MaxScore, "passed": r.Passed,
			"pass_mark": r.PassMark, "not_graded": r.NotGraded, "seed": r.Seed, "device": r.Device.Name, "emulated": r.Device.Emulated})
		if r.NotGraded != "" {
			out = append(out, fmt.Sprintf("Lab %s: not graded here (%s).", r.Lab, r.NotGraded))
			continue
		}
		verdict := "passed"
		if !r.Passed {
			verdict = "not passed"
		}
		out = append(out, fmt.Sprintf("Lab %s: %s / %s, pass mark %.0f%%: %s. Speed: %s.", r.Lab, pts(r.Score), pts(r.MaxScore),
			r.PassMark*100, verdict, r.Speed))
		out = append(out, r.Rules...)
		var left []string
		for ti, t := range r.Tests {
			if t.Status == StatusNotGraded {
				left = append(left, t.Name)
				continue
			}
			status := "failed"
			if t.Status == StatusPassed {
				status = "passed"
			}
			tags := []string{r.Lab, t.Exercise, t.Kind}
			if t.Reason != "" && t.Status != StatusPassed {
				tags = append(tags, t.Reason)
			}
			res.Tests = append(res.Tests, gsTest{Name: r.Lab + " " + t.Name, Number: fmt.Sprintf("%d.%d", li+1, ti+1),
				Score: t.Score, MaxScore: t.MaxScore, Status: status, Output: t.Output, Visibility: t.Visibility, Tags: tags})
		}
		if len(left) > 0 {
			out = append(out, fmt.Sprintf("Not graded on this runner, left out of the tests and the total: %s.", strings.Join(left, "; ")))
		}
	}
	out = append(out, s.TotalLine())
	res.Output = strings.Join(out, "\n")
	res.ExecutionTime = int(math.Round(elapsed))
	res.ExtraData["labs"] = labs
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// ---- JUnit ----

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     float64      `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       float64         `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes JUnit XML: a testsuite per lab (with its score as properties), a testcase
// per test; failed and partly passed tests carry a failure with the reason and the details.
func (s *Grades) WriteJUnit(w io.Writer) error {
	doc := junitSuites{Name: "labrun grade"}
	for _, r := range s.Labs {
		su := junitSuite{Name: r.Lab, Time: r.ElapsedS, Properties: []junitProperty{
			{"score", pts(r.Score)}, {"max_score", pts(r.MaxScore)}, {"pass_mark", fmt.Sprint(r.PassMark)},
			{"passed", fmt.Sprint(r.Passed)}, {"seed", fmt.Sprint(r.Seed)}, {"device", r.Device.Name}, {"speed", r.Speed}}}
		if r.NotGraded != "" {
			su.Properties = append(su.Properties, junitProperty{"not_graded", r.NotGraded})
		}
		for _, t := range r.Tests {
			c := junitCase{Name: t.Name, Classname: r.Lab + "." + t.Exercise, Time: t.TimeS,
				SystemOut: fmt.Sprintf("score %s/%s\n%s", pts(t.Score), pts(t.MaxScore), t.Output)}
			switch t.Status {
			case StatusNotGraded:
				// Neither passed nor failed, and no score: it is not part of this grade.
				c.Skipped = &junitSkipped{Message: notGradedText(t)}
				c.SystemOut = ""
				su.Skipped++
			case StatusFailed, StatusPartial:
				msg := ReasonText(t.Reason)
				if t.Status == StatusPartial {
					msg = fmt.Sprintf("%s of %s points", pts(t.Score), pts(t.MaxScore))
				}
				c.Failure = &junitFailure{Message: msg, Type: t.Reason, Body: t.Output}
				su.Failures++
			}
			su.Cases = append(su.Cases, c)
			su.Tests++
		}
		doc.Tests += su.Tests
		doc.Failures += su.Failures
		doc.Skipped += su.Skipped
		doc.Time += su.Time
		doc.Suites = append(doc.Suites, su)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// ---- markdown ----

// WriteMarkdown writes the summary for GitHub's step summary: a table per lab, the failures'
// details folded.
func (s *Grades) WriteMarkdown(w io.Writer) {
	for _, r := range s.Labs {
		verdict := "✅ passed"
		if !r.Passed {
			verdict = "❌ not passed"
		}
		if r.NotGraded != "" {
			fmt.Fprintf(w, "## Lab %s — %s: ➖ not graded here\n\n%s.\n\n", r.Lab, mdEscape(htmlEscape(r.Title)),
				mdEscape(htmlEscape(upperFirst(r.NotGraded))))
			continue
		}
		fmt.Fprintf(w, "## Lab %s — %s: %s / %s (%s)\n\n", r.Lab, mdEscape(htmlEscape(r.Title)), pts(r.Score), pts(r.MaxScore), verdict)
		fmt.Fprintf(w, "Pass mark %.0f%% · %s · seed `%d` · speed: %s\n\n", r.PassMark*100, mdEscape(r.Device.Name), r.Seed, mdEscape(r.Speed))
		if len(r.Rules) > 0 {
			fmt.Fprintf(w, "<details><summary>How this lab is graded</summary>\n\n")
			for _, rule := range r.Rules {
				fmt.Fprintf(w, "- %s\n", htmlEscape(rule))
			}
			fmt.Fprintf(w, "\n</details>\n\n")
		}
		fmt.Fprintln(w, "| test | points | result |")
		fmt.Fprintln(w, "| --- | ---: | --- |")
		for _, t := range r.Tests {
			res := map[string]string{StatusPassed: "✅ passed", StatusPartial: "🟡 partial"}[t.Status]
			points := pts(t.Score) + " / " + pts(t.MaxScore)
			switch {
			case t.Status == StatusNotGraded:
				res, points = "➖ "+notGradedText(t), "–"
			case res == "":
				res = "❌ " + ReasonText(t.Reason)
			}
			fmt.Fprintf(w, "| %s | %s | %s |\n", mdEscape(htmlEscape(t.Name)), points, mdEscape(htmlEscape(res)))
		}
		fmt.Fprintln(w)
		for _, t := range r.Tests {
			if t.Status == StatusPassed || t.Status == StatusNotGraded || t.Output == "" {
				continue
			}
			fmt.Fprintf(w, "<details><summary>%s</summary>\n\n```\n%s\n```\n\n</details>\n\n", htmlEscape(t.Name),
				strings.ReplaceAll(t.Output, "```", "'''"))
		}
	}
	s.writeMarkdownTotal(w)
}

// writeMarkdownTotal ends the summary: the total over the graded labs and the pass mark.
func (s *Grades) writeMarkdownTotal(w io.Writer) {
	lines := strings.Split(s.TotalLine(), "\n")
	fmt.Fprintf(w, "**%s**\n", mdEscape(htmlEscape(upperFirst(lines[0]))))
	for _, l := range lines[1:] {
		fmt.Fprintf(w, "\n%s\n", mdEscape(htmlEscape(upperFirst(l))))
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// WriteAll writes results.json (Gradescope), junit.xml, summary.md and report.json (every
// detail) into dir, and appends the markdown to $GITHUB_STEP_SUMMARY when it is set.
func (s *Grades) WriteAll(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	write := func(name string, fn func(io.Writer) error) error {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			f.Close()
			return fmt.Errorf("writing %s: %w", p, err)
		}
		written = append(written, p)
		return f.Close()
	}
	if err := write(FileGradescope, s.WriteGradescope); err != nil {
		return written, err
	}
	if err := write(FileJUnit, s.WriteJUnit); err != nil {
		return written, err
	}
	if err := write(FileMarkdown, func(w io.Writer) error { s.WriteMarkdown(w); return nil }); err != nil {
		return written, err
	}
	if err := write(FileReport, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s.Labs)
	}); err != nil {
		return written, err
	}
	if p := os.Getenv("GITHUB_STEP_SUMMARY"); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return written, fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
		}
		s.WriteMarkdown(f)
		if err := f.Close(); err != nil {
			return written, err
		}
		written = append(written, p)
	}
	return written, nil
}
