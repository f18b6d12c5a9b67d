package results

import (
	"encoding/json"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// DeviceProperties is what a lab records about the device beyond its timed entries (lab 01's
// property tables): its fields are top-level entries of the results file's extra data. A part
// that could not be read carries its error instead ("attributes_error", …): a partial
// description is more useful than none.
type DeviceProperties struct {
	Info            gpu.DeviceInfo  `json:"info"`
	Attributes      []gpu.Attribute `json:"attributes,omitempty"` // every attribute, in the backend's order
	AttributesError string          `json:"attributes_error,omitempty"`
	Memory          *MemoryNow      `json:"memory,omitempty"`
	MemoryError     string          `json:"memory_error,omitempty"`
	Peaks           Peaks           `json:"peaks"`
	NVML            NVML            `json:"nvml"`
}

// MemoryNow is the device memory free and in all when the device was described.
type MemoryNow struct {
	FreeBytes  int64 `json:"free_bytes"`
	TotalBytes int64 `json:"total_bytes"`
}

// Peaks are the figures a device's measured ceilings are compared with: the product's datasheet
// and the theoretical figures from its clocks (absent where they are not known).
type Peaks struct {
	Datasheet            *Datasheet `json:"datasheet,omitempty"`
	HBMGBpsFromClocks    *float64   `json:"hbm_gbps_from_clocks,omitempty"`
	FP32TFLOPsFromClocks *float64   `json:"fp32_tflops_from_clocks,omitempty"`
	BF16TFLOPsFromClocks *float64   `json:"bf16_tflops_from_clocks,omitempty"`
}

// Datasheet holds a product's published peak figures.
type Datasheet struct {
	Product      string  `json:"product"`
	Source       string  `json:"source"`
	HBMGBps      float64 `json:"hbm_gbps"`       // memory bandwidth, GB/s (10⁹ B/s)
	FP32TFLOPs   float64 `json:"fp32_tflops"`    // FP32 on CUDA cores (FMA = 2 FLOPs)
	BF16TFLOPs   float64 `json:"bf16_tflops"`    // dense BF16 tensor core (without sparsity)
	HostLinkGBps float64 `json:"host_link_gbps"` // per direction
	HostLink     string  `json:"host_link"`
}

// NVML is what NVIDIA's management library says about the board while it is measured (a GPU at
// its power cap or on a x8 link measures low). Without NVML (the emulator, another vendor, no
// driver) Available is false and Reason says why; that is not an error.
type NVML struct {
	Available         bool              `json:"available"`
	Reason            string            `json:"reason,omitempty"`
	DriverVersion     string            `json:"driver_version,omitempty"`
	NVMLVersion       string            `json:"nvml_version,omitempty"`
	CUDADriverVersion string            `json:"cuda_driver_version,omitempty"`
	MatchedBy         string            `json:"matched_by,omitempty"`   // how the NVML device was found
	DeviceError       string            `json:"device_error,omitempty"` // no NVML device matches
	Device            *NVMLDevice       `json:"device,omitempty"`
	DeviceErrors      map[string]string `json:"device_errors,omitempty"` // field → why it is absent
	Errors            map[string]string `json:"errors,omitempty"`        // system queries that failed
}

// NVMLDevice is the state of one board. A field that NVML could not read is absent, and
// NVML.DeviceErrors says why.
type NVMLDevice struct {
	Name                string   `json:"name,omitempty"`
	UUID                string   `json:"uuid,omitempty"`
	PCIBusID            string   `json:"pci_bus_id,omitempty"`
	MemoryTotalBytes    *uint64  `json:"memory_total_bytes,omitempty"`
	MemoryUsedBytes     *uint64  `json:"memory_used_bytes,omitempty"`
	MemoryFreeBytes     *uint64  `json:"memory_free_bytes,omitempty"`
	MemoryBusWidthBits  *uint32  `json:"memory_bus_width_bits,omitempty"`
	PowerDrawW          *float64 `json:"power_draw_w,omitempty"`
	PowerLimitW         *float64 `json:"power_limit_w,omitempty"`
	PowerLimitEnforcedW *float64 `json:"power_limit_enforced_w,omitempty"`
	PowerLimitDefaultW  *float64 `json:"power_limit_default_w,omitempty"`
	ClockSMMHz          *uint32  `json:"clock_sm_mhz,omitempty"`
	ClockSMMaxMHz       *uint32  `json:"clock_sm_max_mhz,omitempty"`
	ClockMemMHz         *uint32  `json:"clock_mem_mhz,omitempty"`
	ClockMemMaxMHz      *uint32  `json:"clock_mem_max_mhz,omitempty"`
	ClockGraphicsMHz    *uint32  `json:"clock_graphics_mhz,omitempty"`
	ClockGraphicsMaxMHz *uint32  `json:"clock_graphics_max_mhz,omitempty"`
	ClockEventReasons   []string `json:"clock_event_reasons"` // why the clocks are below their maximum; [] none, null not read
	PerformanceState    string   `json:"performance_state,omitempty"`
	TemperatureC        *uint32  `json:"temperature_c,omitempty"`
	PCIeGen             *int     `json:"pcie_gen,omitempty"` // as trained now (lower when idle)
	PCIeGenMax          *int     `json:"pcie_gen_max,omitempty"`
	PCIeWidth           *int     `json:"pcie_width,omitempty"`
	PCIeWidthMax        *int     `json:"pcie_width_max,omitempty"`
	NVLinkLinks         []NVLink `json:"nvlink_links,omitempty"`
	NVLinkActive        *int     `json:"nvlink_active,omitempty"`
	ECC                 string   `json:"ecc,omitempty"` // "enabled", "disabled"
	ECCPending          string   `json:"ecc_pending,omitempty"`
	PersistenceMode     string   `json:"persistence_mode,omitempty"`
	ComputeMode         string   `json:"compute_mode,omitempty"` // "default", "exclusive_process", …
}

// NVLink is one NVLink link of a board.
type NVLink struct {
	Link    int     `json:"link"`
	Active  bool    `json:"active"`
	Version *uint32 `json:"version,omitempty"`
}

// ExtraOf turns a typed record (DeviceProperties, DeviceCeilings) into entries of a results
// file's extra data: one per JSON field of v.
func ExtraOf(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}
