package gpu_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

func TestOpenCommunicatorWithoutLibrary(t *testing.T) {
	dev := openFake(t)
	_, err := gpu.OpenCommunicator([]gpu.Device{dev, dev})
	require.ErrorIs(t, err, gpu.ErrNoCollectives)
	assert.Contains(t, err.Error(), "backend fake")
	_, err = gpu.OpenCommunicator(nil)
	assert.ErrorContains(t, err, "no devices")
}

type nopStream struct{}

func (nopStream) Synchronize() error        { return nil }
func (nopStream) Close() error              { return nil }
func (nopStream) WaitEvent(gpu.Event) error { return nil }

func TestCheckCollective(t *testing.T) {
	s := []gpu.Stream{nopStream{}, nopStream{}}
	p := []gpu.Ptr{16, 32}
	tests := []struct {
		name       string
		send, recv []gpu.Ptr
		count      int
		streams    []gpu.Stream
		want       string
	}{
		{"ok", p, p, 4, s, ""},
		{"empty ok with null", []gpu.Ptr{0, 0}, []gpu.Ptr{0, 0}, 0, s, ""},
		{"too few buffers", p[:1], p, 4, s, "1 send and 2 receive buffers for 2 ranks"},
		{"too few streams", p, p, 4, s[:1], "1 streams for 2 ranks"},
		{"negative", p, p, -1, s, "negative count"},
		{"null", []gpu.Ptr{16, 0}, p, 4, s, "rank 1 has a null buffer"},
		{"nil stream", p, p, 4, []gpu.Stream{nopStream{}, nil}, "rank 1 has no stream"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := gpu.CheckCollective("AllReduce", 2, tc.send, tc.recv, tc.count, tc.streams)
			if tc.want == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.want)
			}
		})
	}
}
