package nvcc

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// Target names. lab.yaml names NVIDIA architectures as nvcc does: sm_80 (that compute capability
// or newer) and sm_90a (an architecture-specific target: wgmma and TMA exist on sm_90 only, and
// a cubin built for sm_90a runs on no other device).

var archRE = regexp.MustCompile(`^sm_([0-9]+)([0-9])(a?)$`)

// Arch is one parsed sm_XY or sm_XYa name.
type Arch struct {
	Major, Minor int
	Specific     bool // the "a" suffix: runs on exactly this compute capability
}

// ParseArch reads an architecture need ("sm_80", "sm_90a"); ok is false for any other word.
func ParseArch(name string) (a Arch, ok bool) {
	m := archRE.FindStringSubmatch(name)
	if m == nil {
		return Arch{}, false
	}
	a.Major, _ = strconv.Atoi(m[1])
	a.Minor, _ = strconv.Atoi(m[2])
	a.Specific = m[3] == "a"
	return a, true
}

// DeviceTarget is the device's own target, its compute capability as nvcc spells it ("sm_90").
func DeviceTarget(dev gpu.DeviceInfo) string { return dev.Arch() }

// Target is the compile target of a kernel with needs on dev: the architecture-specific target
// it names (sm_90a, for Hopper-only instructions), else the device's own.
func Target(dev gpu.DeviceInfo, needs []string) string {
	for _, n := range needs {
		if a, ok := ParseArch(n); ok && a.Specific {
			return n
		}
	}
	return DeviceTarget(dev)
}

// what says in words what an architecture-specific target is for.
var what = map[string]string{"sm_90a": "Hopper: wgmma, TMA"}

// ArchSkipReason says why a kernel that needs the architecture need cannot run on dev ("" when
// it can, or when need is no architecture). orNewer applies the "sm_80 or newer" needs too; the
// emulator, which runs any portable kernel whatever it names, leaves them out.
func ArchSkipReason(dev gpu.DeviceInfo, need string, orNewer bool) string {
	a, ok := ParseArch(need)
	if !ok {
		return ""
	}
	if a.Specific {
		if dev.ComputeMajor == a.Major && dev.ComputeMinor == a.Minor {
			return ""
		}
		if w := what[need]; w != "" {
			return fmt.Sprintf("needs %s (%s); this device is %s", need, w, DeviceTarget(dev))
		}
		return fmt.Sprintf("needs %s; this device is %s", need, DeviceTarget(dev))
	}
	if orNewer && dev.ComputeMajor*10+dev.ComputeMinor < a.Major*10+a.Minor {
		return fmt.Sprintf("needs %s or newer; this device is %s", need, DeviceTarget(dev))
	}
	return ""
}
