//go:build linux && cgo

package nvml

import (
	"fmt"
	"strings"

	nv "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// Properties reads NVML's view of the device that info describes. Any failure is recorded in the
// result, never returned.
func Properties(info gpu.DeviceInfo) results.NVML {
	if reason := notApplicable(info); reason != "" {
		return unavailable(reason)
	}
	if ret := nv.Init(); ret != nv.SUCCESS {
		return unavailable("nvml.Init: " + nv.ErrorString(ret) + " (is the NVIDIA driver, libnvidia-ml.so.1, installed?)")
	}
	// Error strings come from the library while it is loaded: read everything before Shutdown.
	defer nv.Shutdown()

	out := results.NVML{Available: true}
	sys := errs{}
	out.DriverVersion = text(sys, "driver_version")(nv.SystemGetDriverVersion())
	out.NVMLVersion = text(sys, "nvml_version")(nv.SystemGetNVMLVersion())
	if v := read[int](sys, "cuda_driver_version")(nv.SystemGetCudaDriverVersion()); v != nil {
		out.CUDADriverVersion = fmt.Sprintf("%d.%d", *v/1000, (*v%1000)/10)
	}
	out.Errors = sys.orNil()
	dev, how, err := deviceFor(info)
	if err != "" {
		out.DeviceError = err
		return out
	}
	out.MatchedBy = how
	e := errs{}
	out.Device = describeDevice(dev, e)
	out.DeviceErrors = e.orNil()
	return out
}

func describeDevice(dev nv.Device, e errs) *results.NVMLDevice {
	d := &results.NVMLDevice{}
	d.Name = text(e, "name")(dev.GetName())
	d.UUID = text(e, "uuid")(dev.GetUUID())
	if pci := read[nv.PciInfo](e, "pci_bus_id")(dev.GetPciInfo()); pci != nil {
		d.PCIBusID = cString(pci.BusId[:])
	}
	if mem := read[nv.Memory](e, "memory")(dev.GetMemoryInfo()); mem != nil {
		d.MemoryTotalBytes, d.MemoryUsedBytes, d.MemoryFreeBytes = &mem.Total, &mem.Used, &mem.Free
	}
	d.MemoryBusWidthBits = read[uint32](e, "memory_bus_width_bits")(dev.GetMemoryBusWidth())

	// Power, in watts (NVML reports milliwatts).
	d.PowerDrawW = watts(read[uint32](e, "power_draw_w")(dev.GetPowerUsage()))
	d.PowerLimitW = watts(read[uint32](e, "power_limit_w")(dev.GetPowerManagementLimit()))
	d.PowerLimitEnforcedW = watts(read[uint32](e, "power_limit_enforced_w")(dev.GetEnforcedPowerLimit()))
	d.PowerLimitDefaultW = watts(read[uint32](e, "power_limit_default_w")(dev.GetPowerManagementDefaultLimit()))

	// Clocks, in MHz: now, and the most the board allows.
	for _, c := range []struct {
		name     string
		t        nv.ClockType
		now, max **uint32
	}{{"sm", nv.CLOCK_SM, &d.ClockSMMHz, &d.ClockSMMaxMHz}, {"mem", nv.CLOCK_MEM, &d.ClockMemMHz, &d.ClockMemMaxMHz},
		{"graphics", nv.CLOCK_GRAPHICS, &d.ClockGraphicsMHz, &d.ClockGraphicsMaxMHz}} {
		*c.now = read[uint32](e, "clock_"+c.name+"_mhz")(dev.GetClockInfo(c.t))
		*c.max = read[uint32](e, "clock_"+c.name+"_max_mhz")(dev.GetMaxClockInfo(c.t))
	}
	if r := read[uint64](e, "clock_event_reasons")(dev.GetCurrentClocksEventReasons()); r != nil {
		d.ClockEventReasons = clockEventReasons(*r)
	}
	if ps := read[nv.Pstates](e, "performance_state")(dev.GetPerformanceState()); ps != nil {
		d.PerformanceState = fmt.Sprintf("P%d", int(*ps))
	}
	d.TemperatureC = read[uint32](e, "temperature_c")(dev.GetTemperature(nv.TEMPERATURE_GPU))

	// PCIe: the link as trained now (it drops to a lower generation when idle) and at most.
	d.PCIeGen = read[int](e, "pcie_gen")(dev.GetCurrPcieLinkGeneration())
	d.PCIeGenMax = read[int](e, "pcie_gen_max")(dev.GetMaxPcieLinkGeneration())
	d.PCIeWidth = read[int](e, "pcie_width")(dev.GetCurrPcieLinkWidth())
	d.PCIeWidthMax = read[int](e, "pcie_width_max")(dev.GetMaxPcieLinkWidth())

	// NVLink: links are numbered from 0; the first that errors ends the list.
	active := 0
	for link := 0; link < nv.NVLINK_MAX_LINKS; link++ {
		st, ret := dev.GetNvLinkState(link)
		if ret != nv.SUCCESS {
			if link == 0 {
				e["nvlink"] = nv.ErrorString(ret)
			}
			break
		}
		l := results.NVLink{Link: link, Active: st == nv.FEATURE_ENABLED}
		if v, ret := dev.GetNvLinkVersion(link); ret == nv.SUCCESS {
			l.Version = &v
		}
		if l.Active {
			active++
		}
		d.NVLinkLinks = append(d.NVLinkLinks, l)
	}
	if d.NVLinkLinks != nil {
		d.NVLinkActive = &active
	}

	if cur, pending, ret := dev.GetEccMode(); ret == nv.SUCCESS {
		d.ECC, d.ECCPending = enabled(cur), enabled(pending)
	} else {
		e["ecc"] = nv.ErrorString(ret)
	}
	if pm := read[nv.EnableState](e, "persistence_mode")(dev.GetPersistenceMode()); pm != nil {
		d.PersistenceMode = enabled(*pm)
	}
	if cm := read[nv.ComputeMode](e, "compute_mode")(dev.GetComputeMode()); cm != nil {
		d.ComputeMode = computeModeName(*cm)
	}
	return d
}

// errs records why fields are absent, by their JSON names.
type errs map[string]string

func (e errs) orNil() map[string]string {
	if len(e) == 0 {
		return nil
	}
	return e
}

// read takes one NVML query's result: the value when NVML read it, else nil and the reason in e.
func read[T any](e errs, key string) func(T, nv.Return) *T {
	return func(v T, ret nv.Return) *T {
		if ret != nv.SUCCESS {
			e[key] = nv.ErrorString(ret)
			return nil
		}
		return &v
	}
}

// text is read for strings: "" when NVML could not read it.
func text(e errs, key string) func(string, nv.Return) string {
	return func(s string, ret nv.Return) string {
		if p := read[string](e, key)(s, ret); p != nil {
			return *p
		}
		return ""
	}
}

func watts(mw *uint32) *float64 {
	if mw == nil {
		return nil
	}
	w := float64(*mw) / 1000
	return &w
}

// deviceFor finds the NVML device that is the backend's device: by PCI bus id, then by UUID,
// and only then by index (CUDA and NVML may number devices differently: CUDA_VISIBLE_DEVICES,
// CUDA_DEVICE_ORDER).
func deviceFor(info gpu.DeviceInfo) (dev nv.Device, how, err string) {
	var tried []string
	if info.PCIBusID != "" {
		if dev, ret := nv.DeviceGetHandleByPciBusId(info.PCIBusID); ret == nv.SUCCESS {
			return dev, "pci_bus_id " + info.PCIBusID, ""
		} else {
			tried = append(tried, fmt.Sprintf("pci bus id %s: %s", info.PCIBusID, nv.ErrorString(ret)))
		}
	}
	if info.UUID != "" {
		uuid := info.UUID
		if !strings.HasPrefix(uuid, "GPU-") && !strings.HasPrefix(uuid, "MIG-") {
			uuid = "GPU-" + uuid
		}
		if dev, ret := nv.DeviceGetHandleByUUID(uuid); ret == nv.SUCCESS {
			return dev, "uuid " + uuid, ""
		} else {
			tried = append(tried, fmt.Sprintf("uuid %s: %s", uuid, nv.ErrorString(ret)))
		}
	}
	if dev, ret := nv.DeviceGetHandleByIndex(info.Index); ret == nv.SUCCESS {
		return dev, fmt.Sprintf("index %d (CUDA and NVML may order devices differently)", info.Index), ""
	} else {
		tried = append(tried, fmt.Sprintf("index %d: %s", info.Index, nv.ErrorString(ret)))
	}
	return nil, "", "no NVML device matches: " + strings.Join(tried, "; ")
}

func enabled(s nv.EnableState) string {
	if s == nv.FEATURE_ENABLED {
		return "enabled"
	}
	return "disabled"
}

func computeModeName(m nv.ComputeMode) string {
	switch m {
	case nv.COMPUTEMODE_DEFAULT:
		return "default"
	case nv.COMPUTEMODE_EXCLUSIVE_THREAD:
		return "exclusive_thread"
	case nv.COMPUTEMODE_PROHIBITED:
		return "prohibited"
	case nv.COMPUTEMODE_EXCLUSIVE_PROCESS:
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
		{nv.ClocksEventReasonGpuIdle, "gpu_idle"},
		{nv.ClocksEventReasonApplicationsClocksSetting, "applications_clocks_setting"},
		{nv.ClocksEventReasonSwPowerCap, "sw_power_cap"},
		{nv.ClocksThrottleReasonHwSlowdown, "hw_slowdown"},
		{nv.ClocksEventReasonSyncBoost, "sync_boost"},
		{nv.ClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown"},
		{nv.ClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown"},
		{nv.ClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
		{nv.ClocksEventReasonDisplayClockSetting, "display_clock_setting"},
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
