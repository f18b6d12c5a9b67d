package devprops

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// l2Case is one problem of l2_bandwidth: read a buffer of `bytes` `passes` times (kernels/
// 04_l2_read.cu). The variant's passes_per_launch says how the passes are split into launches:
// 0 is all of them in one launch (the launch paid once: L2 bandwidth), 1 is one launch per pass
// (what a copy repeated launch after launch measures: the launch rate, for a buffer this small).
//
// Work counts the bytes read, every pass: a read-only kernel, so this is L2 *read* bandwidth.
type l2Case struct {
	hashedSource
	n4  int64               // 16-byte words in the buffer
	out *gpu.Buffer[uint32] // one sum per thread, for the largest grid of the suite's variants
	// set by Run, read by Check: the threads and block of the launch, and the passes its last
	// launch made
	threads, block, lastFirst, lastCount int64
}

// l2BytesPerRun is how many bytes one Run reads at least, by default: at 8 TB/s about 0.25 ms,
// so that the one launch is about 2% of the time.
const l2BytesPerRun = 2 << 30

func prepareL2(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	// Two passes on the emulator: enough to check that later passes read the same buffer.
	src, err := newHashedSource(env, p, 16, 4, "the buffer, read as 16-byte words", l2BytesPerRun, 2)
	if err != nil {
		return nil, err
	}
	if src.passes > math.MaxInt32 {
		return nil, fmt.Errorf("run_bytes / bytes = %d passes: more than a launch parameter holds", src.passes)
	}
	c := &l2Case{hashedSource: src, n4: src.bytes / 16}
	// The output holds a sum per thread. Its size depends on the variant's grid, and Prepare does
	// not know the variant: size it for the largest grid of the suite (a variant with bad
	// parameters fails in Run, with the reason).
	threads := int64(1)
	for _, v := range s.Variants {
		if grid, block, _, err := c.shape(v); err == nil {
			threads = max(threads, grid*block)
		}
	}
	c.out, err = lab.Output[uint32](env, "out", int(threads), lab.PoisonNaN32)
	return c, err
}

// shape is the launch of a variant: a full SM's worth of blocks on every SM, no more than the
// buffer needs, and the passes per launch.
func (c *l2Case) shape(v *lab.Variant) (grid, block, perLaunch int64, err error) {
	b, err := blockSize(c.env, v, 256)
	if err != nil {
		return 0, 0, 0, err
	}
	block = int64(b)
	grid = min(int64(smCount(c.env))*v.Int("blocks_per_sm", 8), (c.n4+block-1)/block)
	perLaunch = v.Int("passes_per_launch", 0)
	if perLaunch < 0 {
		return 0, 0, 0, fmt.Errorf("variant %s: passes_per_launch = %d (0: all passes in one launch)", v.Name, perLaunch)
	}
	if perLaunch == 0 || perLaunch > c.passes {
		perLaunch = c.passes
	}
	return max(grid, 1), block, perLaunch, nil
}

func (c *l2Case) Run(v *lab.Variant) error {
	k, err := c.env.Kernel(v)
	if err != nil {
		return err
	}
	grid, block, perLaunch, err := c.shape(v)
	if err != nil {
		return err
	}
	if grid*block > int64(c.out.Len()) {
		return fmt.Errorf("variant %s: a grid of %d×%d threads, but the output was sized for the suite's variants (%d)", v.Name, grid, block, c.out.Len())
	}
	c.threads, c.block = grid*block, block
	for first := int64(0); first < c.passes; first += perLaunch {
		n := min(perLaunch, c.passes-first)
		if err := gpu.Launch(k, cfg(c.env, int(grid), int(block)), c.src, c.n4, int32(first), int32(n), c.out); err != nil {
			return err
		}
		c.lastFirst, c.lastCount = first, n
	}
	return nil
}

// word returns the 32-bit words of 16-byte word j of the buffer, as the fill wrote them.
func (c *l2Case) word(j int64) uint32 {
	var s uint32
	for e := range int64(4) {
		s += math.Float32bits(HashFloat(c.seed, uint64(4*j+e)))
	}
	return s
}

// threadSum is what thread tid of the last launch must have written: the sum of the words it read
// in each of that launch's passes (the kernel's rotation and unrolling, recomputed).
func (c *l2Case) threadSum(tid int) uint32 {
	var acc uint32
	for p := c.lastFirst; p < c.lastFirst+c.lastCount; p++ {
		off := (p * 37 * c.block) % c.n4
		for i := int64(tid); i < c.n4; i += c.threads {
			j := i + off
			if j >= c.n4 {
				j -= c.n4
			}
			acc += c.word(j)
		}
	}
	return acc
}

// Check compares the sum over all threads with the passes × the sum of the buffer (integer sums
// are exact in any order), and sampled threads with their own sums.
func (c *l2Case) Check(_ *lab.Variant, outs *lab.Outputs) (check.Report, error) {
	out, err := lab.Raw(outs, c.out)
	if err != nil {
		return check.Report{}, err
	}
	out = out[:c.threads] // the threads of the last launch; the rest keep the poison
	rep := checkThreads(out, int(c.block), c.seed, c.threadSum)
	rep.Method = "exact: the sum of every thread's output against passes × the buffer's sum, and " +
		"sampled threads against their own reads recomputed on the CPU"
	var total atomic.Uint32
	matref.ParallelFor(int(c.n4), func(lo, hi int) {
		var s uint32
		for j := lo; j < hi; j++ {
			s += c.word(int64(j))
		}
		total.Add(s)
	})
	var got uint32
	for _, x := range out {
		got += x
	}
	if want := total.Load() * uint32(c.lastCount); got != want {
		rep.RelErr = 1
		failWith(&rep, fmt.Sprintf("sum of the outputs %d, want %d (%d passes × the buffer's sum)", got, want, c.lastCount))
	}
	return rep, nil
}

func (c *l2Case) Work() lab.Work { return lab.Work{Bytes: float64(c.bytes * c.passes)} }
