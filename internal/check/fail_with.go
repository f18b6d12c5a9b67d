package check

// FailWith fails r for a reason found beside its comparison (a wrong sum, a NaN count), said
// first in its note.
func (r *Report) FailWith(reason string) {
	if r.Note != "" {
		reason += "; " + r.Note
	}
	r.OK, r.Note = false, reason
}
