package site

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/results"
)

// fmtTime writes a time in milliseconds with a unit that suits it.
func fmtTime(ms float64) string {
	switch {
	case ms <= 0:
		return "–"
	case ms < 1e-3:
		return fmt.Sprintf("%.0f ns", ms*1e6)
	case ms < 1:
		return fmt.Sprintf("%.1f µs", ms*1e3)
	case ms < 1000:
		return fmt.Sprintf("%.3f ms", ms)
	}
	return fmt.Sprintf("%.2f s", ms/1e3)
}

// fmtSig writes v with about three significant digits and no exponent.
func fmtSig(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// metricValue is an entry's headline figure for the suite's metric, and whether higher is better.
func metricValue(e *results.Entry, metric string) (float64, bool) {
	switch metric {
	case "tflops":
		return e.TFLOPs, true
	case "gbps":
		return e.GBps, true
	case "us":
		if e.PerOpUs > 0 {
			return e.PerOpUs, false
		}
		if e.Time != nil {
			return e.Time.MedianMs * 1e3, false
		}
	}
	return 0, true
}

func metricUnit(metric string) string {
	switch metric {
	case "tflops":
		return "TFLOP/s"
	case "gbps":
		return "GB/s"
	case "us":
		return "µs"
	}
	return metric
}

// fmtRate writes the entry's derived rates: the suite's metric first.
func fmtRate(e *results.Entry, metric string) string {
	var parts []string
	if e.TFLOPs > 0 && metric != "gbps" {
		parts = append(parts, fmtSig(e.TFLOPs)+" TFLOP/s")
	}
	if e.GBps > 0 {
		parts = append(parts, fmtSig(e.GBps)+" GB/s")
	}
	if e.TFLOPs > 0 && metric == "gbps" {
		parts = append(parts, fmtSig(e.TFLOPs)+" TFLOP/s")
	}
	if e.PerOpUs > 0 {
		parts = append(parts, fmtSig(e.PerOpUs)+" µs/op")
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, " · ")
}

// fmtValue writes a value of lab-specific data (a JSON scalar or a small structure).
func fmtValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "–"
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return groupDigits(i)
		}
		if f, err := x.Float64(); err == nil {
			return fmtSig(f)
		}
		return x.String()
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return groupDigits(int64(x)) // an integer, as the JSON had it
		}
		return fmtSig(x)
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = fmtValue(e)
		}
		return strings.Join(parts, ", ")
	case map[string]any:
		keys := sortedKeys(x)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, k+": "+fmtValue(x[k]))
		}
		return strings.Join(parts, "; ")
	}
	return fmt.Sprint(v)
}

// groupDigits writes 1234567 as 1,234,567 (numbers below 100000 as they are).
func groupDigits(i int64) string {
	s := strconv.FormatInt(i, 10)
	if i < 100000 && i > -100000 {
		return s
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for k, r := range s {
		if k > 0 && (len(s)-k)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fmtBytes writes a byte count in binary units.
func fmtBytes(n int64) string {
	switch {
	case n <= 0:
		return "–"
	case n >= 1<<30:
		return fmtSig(float64(n)/(1<<30)) + " GiB"
	case n >= 1<<20:
		return fmtSig(float64(n)/(1<<20)) + " MiB"
	case n >= 1<<10:
		return fmtSig(float64(n)/(1<<10)) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " B"
}

func statusClass(s string) string {
	switch s {
	case results.StatusOK:
		return "status-ok"
	case results.StatusSkipped:
		return "status-skip"
	}
	return "status-bad"
}
