package term

import (
	"fmt"
	"io"
	"strings"
)

// Table is a text table that fits a width: columns are separated by two spaces, the last cell
// of a row is not padded, and when the table is too wide the widest elidable columns are
// shortened (their cells end in "…") until it fits. Columns that may not be elided (names,
// figures) keep their width unless the window is too narrow even for them.
type Table struct {
	Header []string
	// Elide marks the columns that may be shortened, by index; nil: only the last column.
	Elide map[int]bool
	rows  [][]string
	lines map[int]string // full-width lines between rows, by the row index they precede
}

// Row adds a row; missing cells are empty.
func (t *Table) Row(cells ...string) { t.rows = append(t.rows, cells) }

// Line adds a line that is not a row (a note under the rows so far): prose, so it wraps at
// spaces rather than losing its end.
func (t *Table) Line(s string) {
	if t.lines == nil {
		t.lines = map[int]string{}
	}
	if prev, ok := t.lines[len(t.rows)]; ok {
		s = prev + "\n" + s
	}
	t.lines[len(t.rows)] = s
}

const gap = 2

// Write prints the table within width columns.
func (t *Table) Write(w io.Writer, width int) {
	n := len(t.Header)
	for _, r := range t.rows {
		n = max(n, len(r))
	}
	widths := make([]int, n)
	measure := func(r []string) {
		for i, c := range r {
			widths[i] = max(widths[i], DisplayWidth(c))
		}
	}
	for _, r := range t.rows {
		measure(r)
	}
	// A column no row fills (a "note" column when nothing failed) is left out, header and all.
	var keep []int
	for i, x := range widths {
		if x > 0 {
			keep = append(keep, i)
		}
	}
	if len(keep) < n && len(keep) > 0 {
		pick := func(r []string) []string {
			out := make([]string, len(keep))
			for j, i := range keep {
				if i < len(r) {
					out[j] = r[i]
				}
			}
			return out
		}
		elide := map[int]bool{}
		for j, i := range keep {
			if t.Elide[i] || (t.Elide == nil && i == n-1) {
				elide[j] = true
			}
		}
		rows := make([][]string, len(t.rows))
		for k, r := range t.rows {
			rows[k] = pick(r)
		}
		narrow := &Table{Header: pick(t.Header), Elide: elide, rows: rows, lines: t.lines}
		narrow.Write(w, width)
		return
	}
	measure(t.Header)
	elidable := t.Elide
	if elidable == nil {
		elidable = map[int]bool{n - 1: true}
	}
	total := func() int {
		s := gap * (n - 1)
		for _, x := range widths {
			s += x
		}
		return s
	}
	// Shorten the widest elidable column one step at a time, so long columns share the cut; in a
	// window too narrow for that, every column gives way down to a few characters.
	shrink := func(may func(i int) bool, floor int) {
		for total() > width {
			best := -1
			for i := range widths {
				if may(i) && widths[i] > floor && (best < 0 || widths[i] > widths[best]) {
					best = i
				}
			}
			if best < 0 {
				return
			}
			widths[best]--
		}
	}
	shrink(func(i int) bool { return elidable[i] }, 8)
	shrink(func(i int) bool { return i > 0 }, 4) // the first column names the row: it goes last
	shrink(func(int) bool { return true }, 4)
	printRow := func(r []string) {
		var b strings.Builder
		for i := 0; i < n; i++ {
			c := ""
			if i < len(r) {
				c = r[i]
			}
			c = Elide(c, widths[i])
			b.WriteString(c)
			if i < n-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-DisplayWidth(c)+gap))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	printLines := func(i int) {
		if s, ok := t.lines[i]; ok {
			for _, para := range strings.Split(s, "\n") {
				for _, l := range Wrap(para, width, "    ") {
					fmt.Fprintln(w, l)
				}
			}
		}
	}
	if len(t.Header) > 0 {
		printRow(t.Header)
	}
	for i, r := range t.rows {
		printLines(i)
		printRow(r)
	}
	printLines(len(t.rows))
}
