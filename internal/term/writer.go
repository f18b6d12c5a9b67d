package term

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// WrapWriter passes text through line by line, wrapping each line wider than Width at spaces
// (continuation lines indented) and dropping trailing spaces. Progress and messages go through
// it, so a long compile error stays whole instead of being cut.
type WrapWriter struct {
	W     io.Writer
	Width int

	mu  sync.Mutex
	buf []byte
}

// NewWrapWriter wraps w at width columns.
func NewWrapWriter(w io.Writer, width int) *WrapWriter { return &WrapWriter{W: w, Width: width} }

func (ww *WrapWriter) Write(p []byte) (int, error) {
	ww.mu.Lock()
	defer ww.mu.Unlock()
	ww.buf = append(ww.buf, p...)
	for {
		i := bytes.IndexByte(ww.buf, '\n')
		if i < 0 {
			break
		}
		line := string(ww.buf[:i])
		ww.buf = ww.buf[i+1:]
		if err := ww.emit(line); err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

// Flush writes a last line that has no newline yet.
func (ww *WrapWriter) Flush() error {
	ww.mu.Lock()
	defer ww.mu.Unlock()
	if len(ww.buf) == 0 {
		return nil
	}
	line := string(ww.buf)
	ww.buf = nil
	return ww.emit(line)
}

func (ww *WrapWriter) emit(line string) error {
	var b bytes.Buffer
	lead := len(line) - len(strings.TrimLeft(line, " "))
	for _, l := range Wrap(line, ww.Width, strings.Repeat(" ", lead+4)) {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	_, err := ww.W.Write(b.Bytes())
	return err
}
