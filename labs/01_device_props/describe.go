package devprops

import (
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

// Describe records what the device says about itself, for the chapter's property tables:
//
//	"info"        the identity and main limits (gpu.DeviceInfo)
//	"attributes"  every attribute the backend reads, in the backend's order ([]gpu.Attribute)
//	"memory"      free and total device memory now
//	"peaks"       the datasheet and clock-derived peak figures the ceilings are compared with
//	"nvml"        what NVML adds (power, clocks, thermals, PCIe, NVLink, modes), or
//	              {"available": false, "reason": …} where there is no NVML
//
// A part that cannot be read is recorded with its error ("attributes_error", …): a partial
// description is more useful than none, and NVML's absence is normal (laptops, CI, the emulator).
func (Lab) Describe(env *lab.Env) (map[string]any, error) {
	info := env.Device.Info()
	out := map[string]any{"info": info}

	if attrs, err := env.Device.Attributes(); err != nil {
		out["attributes_error"] = err.Error()
	} else {
		out["attributes"] = attrs
	}
	if free, total, err := env.Device.MemInfo(); err != nil {
		out["memory_error"] = err.Error()
	} else {
		out["memory"] = map[string]any{"free_bytes": free, "total_bytes": total}
	}
	out["peaks"] = peakTable(info)
	out["nvml"] = describeNVML(info)
	return out, nil
}

// peakTable lists, for the property page, every peak figure Summarize may compare with.
func peakTable(info gpu.DeviceInfo) map[string]any {
	t := map[string]any{}
	if ds, ok := LookupDatasheet(info.Name); ok {
		t["datasheet"] = ds
	}
	if v, ok := MemoryGBpsFromClocks(info); ok {
		t["hbm_gbps_from_clocks"] = v
	}
	if v, ok := FP32TFLOPsFromClocks(info); ok {
		t["fp32_tflops_from_clocks"] = v
	}
	if v, ok := BF16TFLOPsFromClocks(info); ok {
		t["bf16_tflops_from_clocks"] = v
	}
	return t
}
