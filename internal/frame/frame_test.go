package frame

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	for _, m := range []string{"hello", "", "world"} {
		require.NoError(t, Write(&buf, []byte(m)))
	}
	assert.Equal(t, []byte{5, 0, 0, 0}, buf.Bytes()[:4], "little-endian length first")
	for _, want := range []string{"hello", "", "world"} {
		got, err := Read(&buf, 16)
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
	_, err := Read(&buf, 16)
	assert.ErrorIs(t, err, io.EOF)
}

func TestReadRefuses(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, make([]byte, 17)))
	_, err := Read(bytes.NewReader(buf.Bytes()), 16)
	assert.ErrorContains(t, err, "a message of 17 bytes is over the limit of 16 bytes")

	_, err = Read(bytes.NewReader(buf.Bytes()[:10]), 32)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "a frame cut short")
}
