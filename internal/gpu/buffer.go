package gpu

import (
	"fmt"
	"unsafe"
)

// Elem is a type a Buffer can hold: fixed-size numbers, including the 16-bit float formats.
type Elem interface {
	~float32 | ~float64 | ~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64
}

// Buffer is a typed array in device memory.
type Buffer[T Elem] struct {
	dev Device
	ptr Ptr
	n   int
}

// Alloc allocates n elements of T on d. The contents are undefined: fill or poison them.
func Alloc[T Elem](d Device, n int) (*Buffer[T], error) {
	if n < 0 {
		return nil, fmt.Errorf("alloc: negative length %d", n)
	}
	var zero T
	bytes := int64(n) * int64(unsafe.Sizeof(zero))
	if bytes == 0 {
		bytes = int64(unsafe.Sizeof(zero)) // a valid, distinct address even for empty buffers
	}
	p, err := d.Malloc(bytes)
	if err != nil {
		return nil, fmt.Errorf("alloc %d × %T (%s): %w", n, zero, HumanBytes(bytes), err)
	}
	return &Buffer[T]{dev: d, ptr: p, n: n}, nil
}

// Upload allocates a buffer holding a copy of host.
func Upload[T Elem](d Device, host []T) (*Buffer[T], error) {
	b, err := Alloc[T](d, len(host))
	if err != nil {
		return nil, err
	}
	if err := b.CopyFromHost(host, nil); err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}

// DevicePtr makes a Buffer usable as a kernel argument.
func (b *Buffer[T]) DevicePtr() Ptr { return b.ptr }

// Len is the number of elements.
func (b *Buffer[T]) Len() int { return b.n }

// Bytes is the size in bytes.
func (b *Buffer[T]) Bytes() int64 {
	var zero T
	return int64(b.n) * int64(unsafe.Sizeof(zero))
}

// Device is the device that owns the buffer.
func (b *Buffer[T]) Device() Device { return b.dev }

// CopyFromHost copies host into the buffer (len(host) must equal Len), ordered on s.
func (b *Buffer[T]) CopyFromHost(host []T, s Stream) error {
	if len(host) != b.n {
		return fmt.Errorf("copy to device: host slice has %d elements, buffer has %d", len(host), b.n)
	}
	return b.CopyFromHostAt(0, host, s)
}

// CopyFromHostAt copies host into the buffer's elements from off on, ordered on s.
func (b *Buffer[T]) CopyFromHostAt(off int, host []T, s Stream) error {
	if off < 0 || off+len(host) > b.n {
		return fmt.Errorf("copy to device: %d elements at %d do not fit a buffer of %d", len(host), off, b.n)
	}
	if len(host) == 0 {
		return nil
	}
	var zero T
	at := b.ptr + Ptr(int64(off)*int64(unsafe.Sizeof(zero)))
	return b.dev.CopyHtoD(at, unsafe.Pointer(&host[0]), int64(len(host))*int64(unsafe.Sizeof(zero)), s)
}

// CopyToHost copies the buffer into host (len(host) must equal Len) and waits for the copy.
func (b *Buffer[T]) CopyToHost(host []T, s Stream) error {
	if len(host) != b.n {
		return fmt.Errorf("copy to host: host slice has %d elements, buffer has %d", len(host), b.n)
	}
	if b.n == 0 {
		return nil
	}
	if err := b.dev.CopyDtoH(unsafe.Pointer(&host[0]), b.ptr, b.Bytes(), s); err != nil {
		return err
	}
	if s != nil {
		return s.Synchronize()
	}
	return b.dev.Synchronize()
}

// Download returns a new host slice with the buffer's contents.
func (b *Buffer[T]) Download() ([]T, error) {
	host := make([]T, b.n)
	return host, b.CopyToHost(host, nil)
}

// CopyFrom copies src (same length, same device) into b, ordered on s.
func (b *Buffer[T]) CopyFrom(src *Buffer[T], s Stream) error {
	if src.n != b.n {
		return fmt.Errorf("device copy: source has %d elements, destination %d", src.n, b.n)
	}
	if b.n == 0 {
		return nil
	}
	if src.dev != b.dev {
		return src.dev.CopyPeer(b.ptr, b.dev, src.ptr, b.Bytes(), s)
	}
	return b.dev.CopyDtoD(b.ptr, src.ptr, b.Bytes(), s)
}

// Fill32 sets every 32-bit word of the buffer to the bit pattern v (T must be 4 bytes wide).
// Poisoning float outputs with NaN uses it: Fill32(math.Float32bits(float32(math.NaN()))).
func (b *Buffer[T]) Fill32(v uint32, s Stream) error {
	var zero T
	if unsafe.Sizeof(zero) != 4 {
		return fmt.Errorf("Fill32 on a buffer of %T (%d-byte elements)", zero, unsafe.Sizeof(zero))
	}
	if b.n == 0 {
		return nil
	}
	return b.dev.MemsetD32(b.ptr, v, int64(b.n), s)
}

// FillBytes sets every byte of the buffer to v.
func (b *Buffer[T]) FillBytes(v uint8, s Stream) error {
	if b.n == 0 {
		return nil
	}
	return b.dev.MemsetD8(b.ptr, v, b.Bytes(), s)
}

// Free releases the buffer; it is safe to call twice.
func (b *Buffer[T]) Free() error {
	if b == nil || b.ptr == 0 {
		return nil
	}
	err := b.dev.Free(b.ptr)
	b.ptr = 0
	return err
}

// HumanBytes formats a byte count with binary units: 512 B, 1.5 KiB, 4 GiB.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %ciB", int64(v), "KMGTPE"[exp])
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[exp])
}

// Fill32Each fills bufs[i] with the 32-bit pattern v on streams[i] (one buffer per device of a
// multi-device lab, say), stopping at the first error, which names the index.
func Fill32Each[T Elem](bufs []*Buffer[T], v uint32, streams []Stream) error {
	for i, b := range bufs {
		if err := b.Fill32(v, streams[i]); err != nil {
			return fmt.Errorf("rank %d: %w", i, err)
		}
	}
	return nil
}

// AllocShared allocates n elements of T on d that other processes (the ranks of a job on this
// node) can map, and returns the handle they map it with (OpenSharedBuffer). Free releases it
// here; the peers' mappings stay valid until they free theirs.
func AllocShared[T Elem](d Device, n int) (*Buffer[T], []byte, error) {
	if n < 0 {
		return nil, nil, fmt.Errorf("alloc shared: negative length %d", n)
	}
	var zero T
	bytes := max(int64(n), 1) * int64(unsafe.Sizeof(zero))
	p, h, err := MallocShared(d, bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("alloc shared %d × %T (%s): %w", n, zero, HumanBytes(bytes), err)
	}
	return &Buffer[T]{dev: d, ptr: p, n: n}, h, nil
}

// OpenSharedBuffer maps on d the buffer of n elements of T that another process shared with
// AllocShared. Free unmaps it here.
func OpenSharedBuffer[T Elem](d Device, handle []byte, n int) (*Buffer[T], error) {
	p, err := OpenShared(d, handle)
	if err != nil {
		return nil, err
	}
	return &Buffer[T]{dev: d, ptr: p, n: n}, nil
}
