package lab

import (
	"fmt"
	"strings"
	"sync"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// Helpers that several labs' drivers need, written once.

// Precision is the number format of a suite's data.
type Precision int

const (
	FP32 Precision = iota // fp32 data
	BF16                  // bf16 data (fp32 accumulation)
)

func (p Precision) String() string {
	if p == BF16 {
		return "bf16"
	}
	return "fp32"
}

// Bytes is the size of one element.
func (p Precision) Bytes() int {
	if p == BF16 {
		return 2
	}
	return 4
}

// DataType is the element type as the vendor libraries name it.
func (p Precision) DataType() gpu.DataType {
	if p == BF16 {
		return gpu.BF16
	}
	return gpu.F32
}

// PrecisionOf is the course's convention: suites whose name starts with "bf16" have bf16 data,
// the others fp32.
func PrecisionOf(s *Suite) Precision {
	if strings.HasPrefix(s.Name, "bf16") {
		return BF16
	}
	return FP32
}

// MNK is a matrix product's sizes: C (M×N) = A (M×K) · B (K×N).
type MNK struct{ M, N, K int }

// MNKOf reads a problem's m, n and k; def says what a missing n or k takes (the problem's m when
// true, nothing otherwise). Every size must be at least 1 and every matrix below 2^31 elements,
// the reach of the kernels' 32-bit indices.
func MNKOf(p Problem, squareDefault bool) (MNK, error) {
	m := p.Int("m", 0)
	def := int64(0)
	if squareDefault {
		def = m
	}
	s := MNK{M: int(m), N: int(p.Int("n", def)), K: int(p.Int("k", def))}
	if s.M < 1 || s.N < 1 || s.K < 1 {
		return s, fmt.Errorf("problem %q: m, n and k must be at least 1 (got %d×%d×%d)", p.Name, s.M, s.N, s.K)
	}
	for _, e := range [][2]int{{s.M, s.K}, {s.K, s.N}, {s.M, s.N}} {
		if int64(e[0])*int64(e[1]) >= 1<<31 {
			return s, fmt.Errorf("problem %q: a %d×%d matrix has 2^31 elements or more, beyond the kernels' 32-bit indices", p.Name, e[0], e[1])
		}
	}
	return s, nil
}

// CeilDiv is ⌈a/b⌉ for positive b.
func CeilDiv(a, b int) int { return (a + b - 1) / b }

// staticSharedLimit is the dynamic shared memory a kernel may use without opting in.
const staticSharedLimit = 48 << 10

// The opt-in to more than 48 KiB of shared memory is a property of the kernel: set it once per
// kernel and size, not in every timed run.
var (
	optMu   sync.Mutex
	optDone = map[gpu.Kernel]int{}
)

// OptInShared lets kernel k use bytes of dynamic shared memory (nothing to do up to 48 KiB).
func OptInShared(k gpu.Kernel, bytes int) error {
	if bytes <= staticSharedLimit {
		return nil
	}
	optMu.Lock()
	defer optMu.Unlock()
	if optDone[k] >= bytes {
		return nil
	}
	if err := k.SetMaxDynamicShared(bytes); err != nil {
		return fmt.Errorf("%s needs %s of dynamic shared memory: %w", k.Name(), gpu.HumanBytes(int64(bytes)), err)
	}
	optDone[k] = bytes
	return nil
}

// BlocksPerSM is how many blocks of k (threads each, dynSmem bytes of dynamic shared memory) fit
// on one SM at once, from the backend's occupancy calculator; 1 where it has none (the emulator
// runs one block per worker).
func BlocksPerSM(k gpu.Kernel, threads, dynSmem int) (int, error) {
	n, ok, err := gpu.MaxActiveBlocksPerSM(k, threads, dynSmem)
	if err != nil {
		return 0, fmt.Errorf("occupancy of %s: %w", k.Name(), err)
	}
	if !ok {
		return 1, nil
	}
	return max(n, 1), nil
}

// TensorMap encodes a TMA tensor map on env's device for the current case, once per description
// (the case's timed runs reuse it); what names it in errors ("A").
func TensorMap(env *Env, what string, d gpu.TensorMapDesc) (gpu.RawArg, error) {
	a := env.arena()
	key := fmt.Sprintf("%+v", d)
	if m, ok := a.maps[key]; ok {
		return m, nil
	}
	m, err := gpu.EncodeTensorMap(env.Device, d)
	if err != nil {
		return m, fmt.Errorf("tensor map of %s: %w", what, err)
	}
	if a.maps == nil {
		a.maps = map[string]gpu.RawArg{}
	}
	a.maps[key] = m
	return m, nil
}

// NeedMemory refuses a problem whose buffers (bytes on env's device) do not fit in the free
// memory, before anything is allocated.
func NeedMemory(env *Env, bytes int64) error {
	free, total, err := env.Device.MemInfo()
	if err == nil && total > 0 && bytes > free {
		return fmt.Errorf("needs %s of device memory, %s of %s is free (use a smaller problem)",
			gpu.HumanBytes(bytes), gpu.HumanBytes(free), gpu.HumanBytes(total))
	}
	return nil
}
