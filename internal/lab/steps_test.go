package lab

import (
	"errors"
	"slices"
	"testing"
)

func TestInOrder(t *testing.T) {
	var ran []int
	step := func(i int, err error) func() error { return func() error { ran = append(ran, i); return err } }
	boom := errors.New("boom")
	if err := InOrder(step(1, nil), step(2, boom), step(3, nil)); err != boom || !slices.Equal(ran, []int{1, 2}) {
		t.Fatalf("InOrder = %v after %v, want boom after [1 2]", err, ran)
	}
	if err := InOrder(); err != nil {
		t.Fatal(err)
	}
}

func TestOrOne(t *testing.T) {
	if got := OrOne([]int32{}, 3); !slices.Equal(got, []int32{0, 0, 0}) {
		t.Fatalf("OrOne(empty, 3) = %v", got)
	}
	if got := OrOne([]int{4, 5}, 3); !slices.Equal(got, []int{4, 5}) {
		t.Fatalf("OrOne([4 5], 3) = %v", got)
	}
}
