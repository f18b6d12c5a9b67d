package devprops

import (
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/nvml"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// RecordDevice records what the device says about itself, for the chapter's property tables
// (results.DeviceProperties): its identity and limits, every attribute the backend reads, the
// memory free now, the peak figures the ceilings are compared with, and what NVML adds.
func (Lab) RecordDevice(env *lab.Env) (map[string]any, error) {
	info := env.Device.Info()
	p := results.DeviceProperties{Info: info, Peaks: peaks(info), NVML: nvml.Properties(info)}
	if attrs, err := env.Device.Attributes(); err != nil {
		p.AttributesError = err.Error()
	} else {
		p.Attributes = attrs
	}
	if free, total, err := env.Device.MemInfo(); err != nil {
		p.MemoryError = err.Error()
	} else {
		p.Memory = &results.MemoryNow{FreeBytes: free, TotalBytes: total}
	}
	return results.ExtraOf(p)
}

// peaks lists, for the property page, every peak figure Derive may compare with.
func peaks(info gpu.DeviceInfo) results.Peaks {
	var p results.Peaks
	if ds, ok := LookupDatasheet(info.Name); ok {
		p.Datasheet = &ds
	}
	p.HBMGBpsFromClocks = optional(MemoryGBpsFromClocks(info))
	p.FP32TFLOPsFromClocks = optional(FP32TFLOPsFromClocks(info))
	p.BF16TFLOPsFromClocks = optional(BF16TFLOPsFromClocks(info))
	return p
}

// optional is a figure that may be unknown.
func optional(v float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	return &v
}
