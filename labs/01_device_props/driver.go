// Package devprops is lab 01, "the device and how to measure it": it records every property of
// the device (CUDA attributes and NVML) and measures the ceilings that later labs compare with —
// HBM and L2 copy bandwidth, the FP32 FMA rate, the bf16 tensor-core rate through cuBLAS, the
// cost of a kernel launch, and the host link.
//
// Each suite is one benchmark: its prepare function makes the problem's inputs and returns the
// variant's launch, the check and the work counts (lab.CaseOf); the engine allocates, poisons,
// checks, times, records and frees. Lab also implements lab.DeviceRecorder (the property tables)
// and lab.Deriver (the measured ceilings, derive.go).
package devprops

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

// LabDir is the lab's directory name, under which the driver registers.
const LabDir = "01_device_props"

// Suite names (lab.yaml).
const (
	SuiteHBM      = "hbm_bandwidth"
	SuiteL2       = "l2_bandwidth"
	SuiteFMA      = "fp32_fma"
	SuiteTensor   = "tensor_bf16"
	SuiteLaunch   = "launch_latency"
	SuiteHostLink = "host_link"
)

// Library calls that variants name in lab.yaml (library: ...), made through the device API.
const (
	LibMemcpyDtoD   = "memcpy_dtod"   // Device.CopyDtoD (cuMemcpyDtoDAsync)
	LibMemcpyHtoD   = "memcpy_htod"   // Device.CopyHtoD (cuMemcpyHtoDAsync)
	LibMemcpyDtoH   = "memcpy_dtoh"   // Device.CopyDtoH (cuMemcpyDtoHAsync)
	LibCublasGemmEx = "cublas_gemmex" // BLAS.GemmEx, bf16 in, f32 out, f32 accumulation
)

// FillEntry is the helper kernel that generates inputs on the device (kernels/00_fill.cu).
const FillEntry = "fill_f32"

// Lab is the driver of lab 01.
type Lab struct{}

func init() { lab.RegisterDriver(LabDir, Lab{}) }

var _, _ = lab.DeviceRecorder(Lab{}), lab.Deriver(Lab{})

// benchmarks are the suites' prepare functions.
var benchmarks = map[string]func(*lab.Env, *lab.Suite, lab.Problem) (lab.Case, error){
	SuiteHBM: prepareCopy, SuiteL2: prepareL2, SuiteFMA: prepareFMA,
	SuiteTensor: prepareTensor, SuiteLaunch: prepareLaunch, SuiteHostLink: prepareHostLink,
}

// Prepare allocates and fills the problem p of suite s.
func (Lab) Prepare(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	prepare, ok := benchmarks[s.Name]
	if !ok {
		return nil, fmt.Errorf("lab %s has no suite %q", LabDir, s.Name)
	}
	c, err := prepare(env, s, p)
	if err != nil {
		return nil, fmt.Errorf("%s, problem %q: %w", s.Name, p.Name, err)
	}
	return c, nil
}

// threadSamples is how many threads a check recomputes on the CPU, at most (lab.CheckThreads).
const threadSamples = 96

// flagPoison is the byte the launch flags are poisoned with, flagSentinel a flag that holds it;
// the token is never equal to it.
const flagPoison, flagSentinel = 0xA5, 0xA5A5A5A5

// prepareLaunch is one problem of launch_latency: `launches` launches of the (almost) empty kernel
// in one Run (Work.Ops: the time of one launch). Launch i writes token into flags[i]: every slot
// written proves that every launch ran with its own arguments.
func prepareLaunch(env *lab.Env, _ *lab.Suite, p lab.Problem) (lab.Case, error) {
	launches, blocks := p.Int("launches", 1000), p.Int("blocks", 1)
	if bps := p.Int("blocks_per_sm", 0); bps > 0 {
		blocks = bps * int64(env.SMs())
	}
	if launches < 1 || launches > 1<<24 {
		return nil, fmt.Errorf("launches = %d must be in 1..%d", launches, 1<<24)
	}
	if blocks < 1 || blocks > 1<<31-1 {
		return nil, fmt.Errorf("blocks = %d must be in 1..2³¹−1", blocks)
	}
	var token uint32
	for token == 0 || token == flagSentinel {
		token = env.RNG.Uint32()
	}
	flags, err := lab.Output[uint32](env, "flags", int(launches), lab.PoisonBytes(flagPoison))
	if err != nil {
		return nil, err
	}
	// With params.sync = 1 Run waits for each launch: the time per op is the round trip (launch,
	// run, completion seen by the host). gpu.Launch packs the arguments on every call; here the
	// launch itself is measured, so they are packed once and only the index is re-encoded.
	run := func(v *lab.Variant) error {
		k, err := env.Kernel(v)
		if err != nil {
			return err
		}
		block, err := env.Block(v, "block", 32)
		if err != nil {
			return err
		}
		params, err := k.Params()
		if err != nil {
			return fmt.Errorf("launch %s: reading parameter info: %w", k.Name(), err)
		}
		packed, err := gpu.PackArgs(k.Name(), params, []any{flags, int32(0), token})
		if err != nil {
			return err
		}
		lc, sync := env.Config1D(int(blocks), block), v.Int("sync", 0) != 0
		for i := int64(0); i < launches; i++ {
			args := [][]byte{packed[0], binary.LittleEndian.AppendUint32(nil, uint32(i)), packed[2]}
			if err := k.LaunchPacked(lc, args); err != nil {
				return fmt.Errorf("launch %d of %s grid %v block %v: %w", i, k.Name(), lc.Grid, lc.Block, err)
			}
			if sync {
				if err := env.Stream.Synchronize(); err != nil {
					return err
				}
			}
		}
		return nil
	}
	chk := func(_ *lab.Variant, out *lab.Outputs) (check.Report, error) {
		got, err := lab.Raw(out, flags)
		if err != nil {
			return check.Report{}, err
		}
		rep := check.Exact(got, slices.Repeat([]uint32{token}, len(got)))
		rep.Method = "exact: every launch wrote its token into its own flag slot"
		for _, g := range got {
			if g == flagSentinel {
				rep.Unwritten++
			}
		}
		if rep.Unwritten > 0 {
			rep.Note = fmt.Sprintf("%d of %d launches left their flag unwritten", rep.Unwritten, len(got))
		}
		return rep, nil
	}
	return lab.CaseOf(run, chk, lab.Work{Ops: int(launches)}), nil
}

// prepareHostLink is one problem of host_link: copies of `bytes` random bytes between host and
// device, from page-locked (pinned) or ordinary (pageable) host memory. Prepare does not know the
// variant, so it makes both directions' buffers:
//
//	host src (pinned; a pageable twin)  --h2d-->  devDst
//	host dst (pinned; a pageable twin) <--d2h--   devSrc (a copy of host src)
//
// The destinations are outputs the engine poisons: each check proves that the timed copy moved
// the data.
func prepareHostLink(env *lab.Env, _ *lab.Suite, p lab.Problem) (lab.Case, error) {
	n := p.Int("bytes", 0)
	if n < 1 {
		return nil, fmt.Errorf("bytes = %d must be at least 1", n)
	}
	const poison = 0xA5
	a := lab.NewPrep(env)
	a.Need(2 * n)
	src := a.PinnedHost("pinned source", int(n))
	for i := 0; i < len(src); i += 8 { // random bytes from the lab's seeded generator (none if src failed: Done says why)
		copy(src[i:], binary.LittleEndian.AppendUint64(nil, env.RNG.Uint64()))
	}
	hostSrc := map[bool][]byte{true: src, false: bytes.Clone(src)} // by pinned
	hostDst := map[bool][]byte{
		true:  a.HostOutput("pinned destination", int(n), true, lab.PoisonBytes(poison)),
		false: a.HostOutput("pageable destination", int(n), false, lab.PoisonBytes(poison)),
	}
	devSrc := lab.PrepUpload(a, "device source", src)
	devDst := lab.PrepOutput[uint8](a, "device destination", int(n), lab.PoisonBytes(poison))
	direction := func(v *lab.Variant) (h2d, pinned bool, err error) {
		if v.Library != LibMemcpyHtoD && v.Library != LibMemcpyDtoH {
			return false, false, fmt.Errorf("variant %s: %s knows the library calls %s and %s, not %q",
				v.Name, SuiteHostLink, LibMemcpyHtoD, LibMemcpyDtoH, v.Library)
		}
		return v.Library == LibMemcpyHtoD, v.Int("pinned", 1) != 0, nil
	}
	run := func(v *lab.Variant) error {
		h2d, pinned, err := direction(v)
		if err != nil {
			return err
		}
		if h2d {
			return env.Device.CopyHtoD(devDst.DevicePtr(), unsafe.Pointer(&hostSrc[pinned][0]), n, env.Stream)
		}
		return env.Device.CopyDtoH(unsafe.Pointer(&hostDst[pinned][0]), devSrc.DevicePtr(), n, env.Stream)
	}
	chk := func(v *lab.Variant, out *lab.Outputs) (check.Report, error) {
		h2d, pinned, err := direction(v)
		if err != nil {
			return check.Report{}, err
		}
		got := hostDst[pinned]
		if h2d {
			if got, err = lab.Raw(out, devDst); err != nil {
				return check.Report{}, err
			}
		}
		rep := check.Exact(got, src)
		rep.Method = "exact: random bytes after a round trip through the link"
		return rep, nil
	}
	return lab.Done(a, lab.CaseOf(run, chk, lab.Work{Bytes: float64(n)}))
}
