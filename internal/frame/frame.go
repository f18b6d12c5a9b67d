// Package frame is the length-prefixed framing of the messages that processes of the course
// exchange over a pipe or a socket (the emulator's launcher, the ranks' rendezvous): a 4-byte
// little-endian length, then that many bytes.
package frame

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Write writes b as one frame, in a single Write so that frames from several writers do not
// interleave.
func Write(w io.Writer, b []byte) error {
	hdr := binary.LittleEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	_, err := w.Write(append(hdr, b...))
	return err
}

// Read reads one frame of at most limit bytes; a longer one is an error, read no further.
func Read(r io.Reader, limit uint32) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n > limit {
		return nil, fmt.Errorf("a message of %d bytes is over the limit of %d bytes", n, limit)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}
