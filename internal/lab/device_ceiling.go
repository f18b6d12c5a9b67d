package lab

import (
	"fmt"
	"path/filepath"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// MeasuredCeiling reads the ceiling key (hbm_gbps, bf16_tflops, ...) that lab 01 measured on the
// device of info, from results/<device>/01_device_props.json in the course folder: for a lab's
// Derive (it runs in labrun's process, from the course folder) that sets its times against the
// device's limits. source says where it was read: "results/<device>/01_device_props.json ceiling
// hbm_gbps".
func MeasuredCeiling(info gpu.DeviceInfo, key string) (value float64, source string, err error) {
	root, err := FindRoot(".")
	if err != nil {
		return 0, "", err
	}
	path := results.PathFor(root, info, "01_device_props")
	f, err := results.Load(path) // a missing file is (nil, nil)
	if err != nil {
		return 0, "", err
	}
	var c *results.Ceiling
	if f != nil {
		c = results.FindCeiling(results.CeilingsIn(f.Extra), key)
	}
	if c == nil || c.Measured == nil || *c.Measured <= 0 {
		return 0, "", fmt.Errorf("%s has no measured %s (labrun 01 on this device measures it)", path, key)
	}
	if rel, err := filepath.Rel(root, path); err == nil {
		path = filepath.ToSlash(rel)
	}
	return *c.Measured, path + " ceiling " + key, nil
}
