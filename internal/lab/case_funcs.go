package lab

import "github.com/kernel-labs/kernellabs/internal/check"

// CaseOf is a Case made of functions, for a Prepare that returns its launch and its check as
// closures over what it prepared (as http.HandlerFunc is a handler made of a function).
func CaseOf(run func(v *Variant) error, chk func(v *Variant, out *Outputs) (check.Report, error), work Work) Case {
	return funcCase{run, chk, work}
}

type funcCase struct {
	run  func(v *Variant) error
	chk  func(v *Variant, out *Outputs) (check.Report, error)
	work Work
}

func (c funcCase) Run(v *Variant) error                                 { return c.run(v) }
func (c funcCase) Check(v *Variant, out *Outputs) (check.Report, error) { return c.chk(v, out) }
func (c funcCase) Work() Work                                           { return c.work }
