package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kernel-labs/kernellabs/internal/check"
)

func TestCaseOf(t *testing.T) {
	var ran *Variant
	v := &Variant{Name: "v"}
	c := CaseOf(func(v *Variant) error { ran = v; return nil },
		func(v *Variant, _ *Outputs) (check.Report, error) { return check.Report{OK: true, Note: v.Name}, nil },
		Work{Ops: 3})
	assert.NoError(t, c.Run(v))
	assert.Same(t, v, ran)
	rep, err := c.Check(v, nil)
	assert.NoError(t, err)
	assert.Equal(t, check.Report{OK: true, Note: "v"}, rep)
	assert.Equal(t, Work{Ops: 3}, c.Work())
}
