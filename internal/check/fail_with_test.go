package check

import "testing"

func TestFailWith(t *testing.T) {
	r := Report{OK: true}
	r.FailWith("sum off")
	if r.OK || r.Note != "sum off" {
		t.Fatalf("got %+v", r)
	}
	r = Exact([]int{1, 2}, []int{1, 3})
	r.FailWith("sum off")
	if r.OK || r.Note != "sum off; 1 of 2 elements differ" {
		t.Fatalf("got %+v", r)
	}
}
