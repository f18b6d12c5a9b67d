package devprops

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

// launchCase is one problem of launch_latency: `launches` launches of the (almost) empty kernel
// in one Run, so Work.Ops = launches and the engine reports the time of one launch.
//
// Launch k writes token into flags[k]; the check finds every slot written, which proves that
// every launch ran with its own arguments.
type launchCase struct {
	env              *lab.Env
	launches, blocks int64
	token            uint32
	flags            *gpu.Buffer[uint32]
}

// flagPoison is the byte the flags are poisoned with, flagSentinel a flag that holds it; the
// token is never equal to it.
const (
	flagPoison   = 0xA5
	flagSentinel = 0xA5A5A5A5
)

func prepareLaunch(env *lab.Env, _ *lab.Suite, p lab.Problem) (lab.Case, error) {
	c := &launchCase{env: env, launches: p.Int("launches", 1000), blocks: p.Int("blocks", 1)}
	if bps := p.Int("blocks_per_sm", 0); bps > 0 {
		c.blocks = bps * int64(smCount(env))
	}
	if c.launches < 1 || c.launches > 1<<24 {
		return nil, fmt.Errorf("launches = %d must be in 1..%d", c.launches, 1<<24)
	}
	if c.blocks < 1 || c.blocks > 1<<31-1 {
		return nil, fmt.Errorf("blocks = %d must be in 1..2³¹−1", c.blocks)
	}
	for c.token == 0 || c.token == flagSentinel {
		c.token = env.RNG.Uint32()
	}
	var err error
	c.flags, err = lab.Output[uint32](env, "flags", int(c.launches), lab.PoisonBytes(flagPoison))
	return c, err
}

// Run launches the kernel `launches` times. With params.sync = 1 it waits for each launch to
// finish before the next one, so the time per op is the round trip (launch, run, completion seen
// by the host) instead of the launch rate.
//
// gpu.Launch reads the kernel's parameter info and packs the arguments on every call. Here the
// launch itself is what is measured, so the arguments are checked and packed once (gpu.PackArgs)
// and only the launch index is re-encoded per launch; the Go-side cost per launch is then a few
// small allocations on top of the driver call.
func (c *launchCase) Run(v *lab.Variant) error {
	k, block, err := kernelOf(c.env, v, 32)
	if err != nil {
		return err
	}
	params, err := k.Params()
	if err != nil {
		return fmt.Errorf("launch %s: reading parameter info: %w", k.Name(), err)
	}
	packed, err := gpu.PackArgs(k.Name(), params, []any{c.flags, int32(0), c.token})
	if err != nil {
		return err
	}
	lc := cfg(c.env, int(c.blocks), block)
	sync := v.Int("sync", 0) != 0
	for i := int64(0); i < c.launches; i++ {
		args := [][]byte{packed[0], binary.LittleEndian.AppendUint32(nil, uint32(i)), packed[2]}
		if err := k.LaunchPacked(lc, args); err != nil {
			return fmt.Errorf("launch %d of %s grid %v block %v: %w", i, k.Name(), lc.Grid, lc.Block, err)
		}
		if sync {
			if err := c.env.Stream.Synchronize(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *launchCase) Check(_ *lab.Variant, out *lab.Outputs) (check.Report, error) {
	got, err := lab.Raw(out, c.flags)
	if err != nil {
		return check.Report{}, err
	}
	rep := check.Exact(got, slices.Repeat([]uint32{c.token}, len(got)))
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

func (c *launchCase) Work() lab.Work { return lab.Work{Ops: int(c.launches)} }
