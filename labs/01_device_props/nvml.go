//go:build linux && cgo

package devprops

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// describeNVML reads what NVML knows about the device that info describes: the driver, power,
// clocks now and at most, temperature, the PCIe link as trained and at most, NVLink links, and the
// ECC, persistence and compute modes. The CUDA attributes say what the chip can do; NVML says what
// state the board is in while you measure it (a GPU at its power cap or on a x8 link measures low).
//
// Any failure is recorded in the map, never returned: NVML is optional.
func describeNVML(info gpu.DeviceInfo) map[string]any {
	if reason := nvmlNotApplicable(info); reason != "" {
		return nvmlUnavailable(reason)
	}
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		return nvmlUnavailable("nvml.Init: " + nvml.ErrorString(ret) + " (is the NVIDIA driver, libnvidia-ml.so.1, installed?)")
	}
	// Error strings come from the library while it is loaded: build the whole map before Shutdown.
	defer nvml.Shutdown()

	out := map[string]any{"available": true}
	errs := map[string]string{}
	put := func(key string, v any, ret nvml.Return) {
		if ret == nvml.SUCCESS {
			out[key] = v
		} else {
			errs[key] = nvml.ErrorString(ret)
		}
	}

	s, ret := nvml.SystemGetDriverVersion()
	put("driver_version", s, ret)
	s, ret = nvml.SystemGetNVMLVersion()
	put("nvml_version", s, ret)
	if v, ret := nvml.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		out["cuda_driver_version"] = fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
	} else {
		errs["cuda_driver_version"] = nvml.ErrorString(ret)
	}

	dev, how, err := nvmlDeviceFor(info)
	if err != "" {
		out["device_error"] = err
		if len(errs) > 0 {
			out["errors"] = errs
		}
		return out
	}
	out["matched_by"] = how
	d := map[string]any{}
	derr := map[string]string{}
	dput := func(key string, v any, ret nvml.Return) {
		if ret == nvml.SUCCESS {
			d[key] = v
		} else {
			derr[key] = nvml.ErrorString(ret)
		}
	}

	name, ret := dev.GetName()
	dput("name", name, ret)
	uuid, ret := dev.GetUUID()
	dput("uuid", uuid, ret)
	if pci, ret := dev.GetPciInfo(); ret == nvml.SUCCESS {
		d["pci_bus_id"] = cString(pci.BusId[:])
	} else {
		derr["pci_bus_id"] = nvml.ErrorString(ret)
	}
	if mem, ret := dev.GetMemoryInfo(); ret == nvml.SUCCESS {
		d["memory_total_bytes"] = mem.Total
		d["memory_used_bytes"] = mem.Used
		d["memory_free_bytes"] = mem.Free
	} else {
		derr["memory"] = nvml.ErrorString(ret)
	}
	bus, ret := dev.GetMemoryBusWidth()
	dput("memory_bus_width_bits", bus, ret)

	// Power, in watts (NVML reports milliwatts).
	watts := func(key string, mw uint32, ret nvml.Return) { dput(key, float64(mw)/1000, ret) }
	mw, ret := dev.GetPowerUsage()
	watts("power_draw_w", mw, ret)
	mw, ret = dev.GetPowerManagementLimit()
	watts("power_limit_w", mw, ret)
	mw, ret = dev.GetEnforcedPowerLimit()
	watts("power_limit_enforced_w", mw, ret)
	mw, ret = dev.GetPowerManagementDefaultLimit()
	watts("power_limit_default_w", mw, ret)

	// Clocks, in MHz: now, and the most the board allows.
	for _, c := range []struct {
		name string
		t    nvml.ClockType
	}{{"sm", nvml.CLOCK_SM}, {"mem", nvml.CLOCK_MEM}, {"graphics", nvml.CLOCK_GRAPHICS}} {
		v, ret := dev.GetClockInfo(c.t)
		dput("clock_"+c.name+"_mhz", v, ret)
		v, ret = dev.GetMaxClockInfo(c.t)
		dput("clock_"+c.name+"_max_mhz", v, ret)
	}
	if reasons, ret := dev.GetCurrentClocksEventReasons(); ret == nvml.SUCCESS {
		d["clock_event_reasons"] = clockEventReasons(reasons)
	} else {
		derr["clock_event_reasons"] = nvml.ErrorString(ret)
	}
	if ps, ret := dev.GetPerformanceState(); ret == nvml.SUCCESS {
		d["performance_state"] = fmt.Sprintf("P%d", int(ps))
	} else {
		derr["performance_state"] = nvml.ErrorString(ret)
	}

	temp, ret := dev.GetTemperature(nvml.TEMPERATURE_GPU)
	dput("temperature_c", temp, ret)

	// PCIe: the link as trained now (it drops to a lower generation when idle) and at most.
	g, ret := dev.GetCurrPcieLinkGeneration()
	dput("pcie_gen", g, ret)
	g, ret = dev.GetMaxPcieLinkGeneration()
	dput("pcie_gen_max", g, ret)
	w, ret := dev.GetCurrPcieLinkWidth()
	dput("pcie_width", w, ret)
	w, ret = dev.GetMaxPcieLinkWidth()
	dput("pcie_width_max", w, ret)

	// NVLink: links are numbered from 0; the first that errors ends the list.
	var links []map[string]any
	active := 0
	for link := 0; link < nvml.NVLINK_MAX_LINKS; link++ {
		st, ret := dev.GetNvLinkState(link)
		if ret != nvml.SUCCESS {
			if link == 0 {
				derr["nvlink"] = nvml.ErrorString(ret)
			}
			break
		}
		l := map[string]any{"link": link, "active": st == nvml.FEATURE_ENABLED}
		if v, ret := dev.GetNvLinkVersion(link); ret == nvml.SUCCESS {
			l["version"] = v
		}
		if st == nvml.FEATURE_ENABLED {
			active++
		}
		links = append(links, l)
	}
	if links != nil {
		d["nvlink_links"] = links
		d["nvlink_active"] = active
	}

	if cur, pending, ret := dev.GetEccMode(); ret == nvml.SUCCESS {
		d["ecc"] = enabled(cur)
		d["ecc_pending"] = enabled(pending)
	} else {
		derr["ecc"] = nvml.ErrorString(ret)
	}
	pm, ret := dev.GetPersistenceMode()
	dput("persistence_mode", enabled(pm), ret)
	if cm, ret := dev.GetComputeMode(); ret == nvml.SUCCESS {
		d["compute_mode"] = computeModeName(cm)
	} else {
		derr["compute_mode"] = nvml.ErrorString(ret)
	}

	out["device"] = d
	if len(derr) > 0 {
		out["device_errors"] = derr
	}
	if len(errs) > 0 {
		out["errors"] = errs
	}
	return out
}

// nvmlDeviceFor finds the NVML device that is the backend's device: by PCI bus id, then by UUID,
// and only then by index (CUDA and NVML may number devices differently: CUDA_VISIBLE_DEVICES,
// CUDA_DEVICE_ORDER).
func nvmlDeviceFor(info gpu.DeviceInfo) (nvml.Device, string, string) {
	var tried []string
	if info.PCIBusID != "" {
		if dev, ret := nvml.DeviceGetHandleByPciBusId(info.PCIBusID); ret == nvml.SUCCESS {
			return dev, "pci_bus_id " + info.PCIBusID, ""
		} else {
			tried = append(tried, fmt.Sprintf("pci bus id %s: %s", info.PCIBusID, nvml.ErrorString(ret)))
		}
	}
	if info.UUID != "" {
		uuid := info.UUID
		if !strings.HasPrefix(uuid, "GPU-") && !strings.HasPrefix(uuid, "MIG-") {
			uuid = "GPU-" + uuid
		}
		if dev, ret := nvml.DeviceGetHandleByUUID(uuid); ret == nvml.SUCCESS {
			return dev, "uuid " + uuid, ""
		} else {
			tried = append(tried, fmt.Sprintf("uuid %s: %s", uuid, nvml.ErrorString(ret)))
		}
	}
	if dev, ret := nvml.DeviceGetHandleByIndex(info.Index); ret == nvml.SUCCESS {
		return dev, fmt.Sprintf("index %d (CUDA and NVML may order devices differently)", info.Index), ""
	} else {
		tried = append(tried, fmt.Sprintf("index %d: %s", info.Index, nvml.ErrorString(ret)))
	}
	return nil, "", "no NVML device matches: " + strings.Join(tried, "; ")
}

func enabled(s nvml.EnableState) string {
	if s == nvml.FEATURE_ENABLED {
		return "enabled"
	}
	return "disabled"
}

func computeModeName(m nvml.ComputeMode) string {
	switch m {
	case nvml.COMPUTEMODE_DEFAULT:
		return "default"
	case nvml.COMPUTEMODE_EXCLUSIVE_THREAD:
		return "exclusive_thread"
	case nvml.COMPUTEMODE_PROHIBITED:
		return "prohibited"
	case nvml.COMPUTEMODE_EXCLUSIVE_PROCESS:
		return "exclusive_process"
	}
	return fmt.Sprintf("mode %d", int(m))
}

// clockEventReasons names the bits of nvmlDeviceGetCurrentClocksEventReasons: why the clocks are
// below their maximum right now.
func clockEventReasons(bits uint64) []string {
	names := []struct {
		bit  uint64
		name string
	}{
		{nvml.ClocksEventReasonGpuIdle, "gpu_idle"},
		{nvml.ClocksEventReasonApplicationsClocksSetting, "applications_clocks_setting"},
		{nvml.ClocksEventReasonSwPowerCap, "sw_power_cap"},
		{nvml.ClocksThrottleReasonHwSlowdown, "hw_slowdown"},
		{nvml.ClocksEventReasonSyncBoost, "sync_boost"},
		{nvml.ClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown"},
		{nvml.ClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown"},
		{nvml.ClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
		{nvml.ClocksEventReasonDisplayClockSetting, "display_clock_setting"},
	}
	out := []string{}
	for _, n := range names {
		if bits&n.bit != 0 {
			out = append(out, n.name)
			bits &^= n.bit
		}
	}
	if bits != 0 {
		out = append(out, fmt.Sprintf("other(0x%x)", bits))
	}
	return out
}

// cString converts NVML's NUL-terminated char array.
func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}
