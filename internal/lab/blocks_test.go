package lab

import (
	"slices"
	"testing"
)

func TestBlocks(t *testing.T) {
	b := Blocks{{1, 2, 0}, {3, 0, 4}, {5, 6, 7}}
	if b.Sent(1) != 7 || b.Received(2) != 11 || b.Total() != 28 {
		t.Fatalf("Sent(1), Received(2), Total = %d, %d, %d; want 7, 11, 28", b.Sent(1), b.Received(2), b.Total())
	}
	if b.SendOffset(2, 2) != 11 || b.RecvOffset(1, 2) != 2 {
		t.Fatalf("SendOffset(2, 2), RecvOffset(1, 2) = %d, %d; want 11, 2", b.SendOffset(2, 2), b.RecvOffset(1, 2))
	}
	sc, so, rc, ro := b.PerPeer(1)
	for _, c := range [][2][]int{{sc, {3, 0, 4}}, {so, {0, 3, 3}}, {rc, {2, 0, 6}}, {ro, {0, 2, 2}}} {
		if !slices.Equal(c[0], c[1]) {
			t.Fatalf("PerPeer(1): %v, want %v", c[0], c[1])
		}
	}
	if !slices.Equal(b.Row(2), []int32{5, 6, 7}) || b.Equal() || !EqualBlocks(3, 4).Equal() || EqualBlocks(2, 4).Total() != 16 {
		t.Fatal("Row, Equal or EqualBlocks")
	}
}

func TestSumAllEqual(t *testing.T) {
	if Sum([]int{1, 2, 3}) != 6 || Sum([]int64(nil)) != 0 {
		t.Fatal("Sum")
	}
	if !AllEqual([]int{2, 2}) || AllEqual([]int{2, 3}) || !AllEqual([]int(nil)) {
		t.Fatal("AllEqual")
	}
}
