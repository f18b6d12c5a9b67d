package site

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestClockText: an entry that recorded the power cap's share of its timing shows it, with the
// SM clock; one that did not shows nothing.
func TestClockText(t *testing.T) {
	data := map[string]any{"power_capped": 0.634, "sm_clock_mhz": 1590.0}
	assert.Equal(t, "power-capped 63% of its timing · 1590 MHz", clockText("en", data))
	assert.Equal(t, "计时期间 63% 的时间受功耗上限限制 · 1590 MHz", clockText("zh", data))
	assert.Equal(t, "power-capped 0% of its timing", clockText("en", map[string]any{"power_capped": 0.0}))
	assert.Empty(t, clockText("en", nil))
	assert.Empty(t, clockText("en", map[string]any{"peer": true}))
}
