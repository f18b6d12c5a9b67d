package lab

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/kernel-labs/kernellabs/internal/results"
)

// report prints one progress line for a finished job, with the wall time since the previous line:
// preparing inputs, checking and timing together, which is what makes a run long.
func (r *runner) report(i, total int, e *results.Entry) {
	now := time.Now()
	wall := ""
	if !r.lastReport.IsZero() {
		wall = fmt.Sprintf(" (%.1fs)", now.Sub(r.lastReport).Seconds())
	}
	r.lastReport = now
	fmt.Fprintf(r.o.Progress, "[%d/%d] %s/%s %s: %s%s\n", i+1, total, e.Suite, e.Variant, e.Problem, outcomeLine(e), wall)
}

// outcomeLine is an entry's outcome in one line. On the emulator it gives the check's
// relative error instead of times and rates: the run says once that emulated times are not
// performance figures.
func outcomeLine(e *results.Entry) string {
	switch e.Status {
	case results.StatusOK:
		if e.Emulated {
			if e.Check != nil && e.Check.Checked > 0 {
				return fmt.Sprintf("ok, rel error %.1e (tolerance %.0e)", e.Check.RelErr, e.Check.Tolerance)
			}
			return "ok"
		}
		if SharedGPU(e) {
			return fmt.Sprintf("ok %s (%s)", Rate(e), SharedGPULabel)
		}
		return fmt.Sprintf("ok %s", Rate(e))
	case results.StatusWrong:
		return "WRONG " + firstLine(e.Error)
	case results.StatusSkipped:
		return "skipped: " + e.Error
	default:
		return strings.ToUpper(e.Status) + ": " + firstLine(e.Error)
	}
}

// Rate formats an entry's headline figures.
func Rate(e *results.Entry) string {
	if e.Time == nil {
		return ""
	}
	parts := []string{}
	if e.TFLOPs > 0 {
		parts = append(parts, fmt.Sprintf("%.2f TFLOP/s", e.TFLOPs))
	}
	if e.GBps > 0 {
		parts = append(parts, fmt.Sprintf("%.1f GB/s", e.GBps))
	}
	if e.Ops > 1 {
		parts = append(parts, fmt.Sprintf("%.2f µs/op", e.PerOpUs))
	} else {
		parts = append(parts, fmt.Sprintf("%.3f ms [%.3f–%.3f]", e.Time.MedianMs, e.Time.MinMs, e.Time.MaxMs))
	}
	if e.Speedup > 0 {
		parts = append(parts, fmt.Sprintf("%.2f× %s", e.Speedup, e.Baseline))
	}
	return strings.Join(parts, "  ")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func prefixWriter(w io.Writer, prefix string) io.Writer {
	return &linePrefixer{w: w, prefix: prefix, atStart: true}
}

type linePrefixer struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  string
	atStart bool
}

func (p *linePrefixer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var sb strings.Builder
	for _, c := range string(b) {
		if p.atStart {
			sb.WriteString(p.prefix)
			p.atStart = false
		}
		sb.WriteRune(c)
		if c == '\n' {
			p.atStart = true
		}
	}
	_, err := io.WriteString(p.w, sb.String())
	return len(b), err
}
