//go:build cgo && linux

package cuda

/*
#include "shim.h"
*/
import "C"

import (
	_ "embed"
	"fmt"
	"os"
	"sync"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// Two aids to timing short operations honestly: the hold of a stream (gpu.Holder) and an L2 flush
// that leaves no dirty lines behind (gpu.L2Flusher). Their device memory lives as long as the
// context, like the process's other timing buffers.

var (
	_ gpu.Holder    = (*stream)(nil)
	_ gpu.L2Flusher = (*device)(nil)
)

// holdState is a stream's hold: a device word the stream waits on and the last value it waited
// for. Each hold waits for the next value, which the release writes from the device's release
// stream.
type holdState struct {
	mu   sync.Mutex
	word C.CUdeviceptr // 0 until the first hold
	n    uint32
}

// releaser is the device's stream for the holds' releases: a non-blocking one, so that a release
// is not stuck behind a synchronous copy that waits for the held stream itself.
type releaser struct {
	once sync.Once
	s    C.CUstream
	err  error
}

func (d *device) releaseStream() (C.CUstream, error) {
	d.release.once.Do(func() {
		d.release.err = check("cuStreamCreate", C.kl_stream_create_nonblocking(d.ctx, &d.release.s))
	})
	return d.release.s, d.release.err
}

// Hold queues a wait on s for the next value of its word (cuStreamWaitValue32, ≥); release writes
// that value from the release stream (cuStreamWriteValue32), once.
func (s *stream) Hold() (func() error, error) {
	rs, err := s.d.releaseStream()
	if err != nil {
		return nil, err
	}
	h := &s.hold
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.word == 0 {
		var p C.CUdeviceptr
		if err := check("cuMemAlloc_v2", C.kl_mem_alloc(s.d.ctx, &p, 4)); err != nil {
			return nil, err
		}
		if err := check("cuMemsetD32Async", C.kl_memset_d32(s.d.ctx, p, 0, 1, rs)); err != nil {
			return nil, err
		}
		if err := check("cuStreamSynchronize", C.kl_stream_synchronize(s.d.ctx, rs)); err != nil {
			return nil, err
		}
		h.word = p
	}
	h.n++
	word, v := h.word, C.uint(h.n)
	if err := check("cuStreamWaitValue32", C.kl_stream_wait_value(s.d.ctx, s.s, word, v)); err != nil {
		return nil, err
	}
	var once sync.Once
	var rerr error
	return func() error {
		once.Do(func() { rerr = check("cuStreamWriteValue32", C.kl_stream_write_value(s.d.ctx, rs, word, v)) })
		return rerr
	}, nil
}

//go:embed l2flush/l2flush.ptx
var l2FlushPTX []byte

// l2Flush is the device's flush: a buffer of four times L2 and the kernel that reads it.
type l2Flush struct {
	once  sync.Once
	err   error
	buf   gpu.Ptr
	words uint64 // 16-byte words
	k     gpu.Kernel
}

// FlushL2 reads a buffer four times the size of L2 (kl_l2_read, l2flush/l2flush.cu) on s: more
// than twice, so that little of the run before survives the cache's replacement policy.
func (d *device) FlushL2(s gpu.Stream) error {
	f := &d.flush
	f.once.Do(func() { f.err = d.initFlush() })
	if f.err != nil {
		return fmt.Errorf("the L2 flush: %w", f.err)
	}
	cfg := gpu.LaunchConfig{Grid: gpu.D1(4 * max(d.info.SMs, 1)), Block: gpu.D1(512), Stream: s}
	return gpu.Launch(f.k, cfg, f.buf, f.words, f.buf, uint32(0x9E3779B9))
}

func (d *device) initFlush() error {
	bytes := 4 * d.info.L2Bytes
	if bytes < 1<<20 {
		bytes = 1 << 20
	}
	buf, err := d.Malloc(bytes)
	if err != nil {
		return err
	}
	if err := d.MemsetD8(buf, 0x5A, bytes, nil); err != nil {
		return err
	}
	// cuModuleLoad reads PTX from a file, as it reads the labs' cubins.
	tmp, err := os.CreateTemp("", "kl-l2flush-*.ptx")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(l2FlushPTX); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	m, err := d.LoadModule(tmp.Name())
	if err != nil {
		return err
	}
	k, err := m.Kernel("kl_l2_read")
	if err != nil {
		return err
	}
	d.flush.buf, d.flush.words, d.flush.k = buf, uint64(bytes/16), k
	return d.Synchronize()
}
