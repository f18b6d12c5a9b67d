package labtest_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/labtest"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The summary's columns line up whatever the names' lengths, and a refusal reads "refused".
func TestSummaryTable(t *testing.T) {
	es := []results.Entry{
		{Suite: "fp32", Variant: "naive", Problem: "4096", Status: results.StatusOK, TFLOPs: 1.5, Speedup: 0.25,
			Check: &check.Report{RelErr: 1e-6}},
		{Suite: "bf16_exercises", Variant: "ex1", Problem: "a_long_problem_name", Status: results.StatusFailed,
			Error: "skipped: needs sm_90a\nmore"},
	}
	lines := strings.Split(strings.TrimSuffix(labtest.SummaryTable(es), "\n"), "\n")
	assert.Len(t, lines, 3)
	for i, cell := range []string{"variant", "naive", "ex1"} {
		assert.Equal(t, len("bf16_exercises "), strings.Index(lines[i], cell), lines[i])
	}
	for i, cell := range []string{"TFLOP/s", "1.50", "0.00"} {
		assert.Equal(t, strings.Index(lines[0], "TFLOP/s")+len("TFLOP/s"), strings.Index(lines[i], cell)+len(cell), "right-aligned: %s", lines[i])
	}
	assert.Contains(t, lines[1], "1.0e-06")
	assert.Contains(t, lines[2], " refused ")
	assert.True(t, labtest.Refused(es[1]))
	assert.False(t, labtest.Refused(es[0]))
	assert.Equal(t, "skipped: needs sm_90a", labtest.FirstLine(es[1].Error))
}
