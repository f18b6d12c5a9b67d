//go:build cgo && linux

package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// deviceAttr is one CUdevice_attribute: its enum value, its name without the
// CU_DEVICE_ATTRIBUTE_ prefix, and a unit where the value has one.
type deviceAttr struct {
	id   int
	name string
	unit string
}

// deviceAttrs is enum CUdevice_attribute_enum of cuda.h, in enum order: values 1-135 as in CUDA
// 12.6, 136-143 as added up to CUDA 12.9, 144-148 as added in CUDA 13. Deprecated aliases of the
// same value (SHARED_MEMORY_PER_BLOCK, REGISTERS_PER_BLOCK, MAXIMUM_TEXTURE2D_ARRAY_*,
// VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED) are left out: each value is listed once.
var deviceAttrs = []deviceAttr{
	{1, "MAX_THREADS_PER_BLOCK", "threads"},
	{2, "MAX_BLOCK_DIM_X", "threads"},
	{3, "MAX_BLOCK_DIM_Y", "threads"},
	{4, "MAX_BLOCK_DIM_Z", "threads"},
	{5, "MAX_GRID_DIM_X", "blocks"},
	{6, "MAX_GRID_DIM_Y", "blocks"},
	{7, "MAX_GRID_DIM_Z", "blocks"},
	{8, "MAX_SHARED_MEMORY_PER_BLOCK", "bytes"},
	{9, "TOTAL_CONSTANT_MEMORY", "bytes"},
	{10, "WARP_SIZE", "threads"},
	{11, "MAX_PITCH", "bytes"},
	{12, "MAX_REGISTERS_PER_BLOCK", "registers"},
	{13, "CLOCK_RATE", "kHz"},
	{14, "TEXTURE_ALIGNMENT", "bytes"},
	{15, "GPU_OVERLAP", ""},
	{16, "MULTIPROCESSOR_COUNT", ""},
	{17, "KERNEL_EXEC_TIMEOUT", ""},
	{18, "INTEGRATED", ""},
	{19, "CAN_MAP_HOST_MEMORY", ""},
	{20, "COMPUTE_MODE", ""},
	{21, "MAXIMUM_TEXTURE1D_WIDTH", ""},
	{22, "MAXIMUM_TEXTURE2D_WIDTH", ""},
	{23, "MAXIMUM_TEXTURE2D_HEIGHT", ""},
	{24, "MAXIMUM_TEXTURE3D_WIDTH", ""},
	{25, "MAXIMUM_TEXTURE3D_HEIGHT", ""},
	{26, "MAXIMUM_TEXTURE3D_DEPTH", ""},
	{27, "MAXIMUM_TEXTURE2D_LAYERED_WIDTH", ""},
	{28, "MAXIMUM_TEXTURE2D_LAYERED_HEIGHT", ""},
	{29, "MAXIMUM_TEXTURE2D_LAYERED_LAYERS", ""},
	{30, "SURFACE_ALIGNMENT", "bytes"},
	{31, "CONCURRENT_KERNELS", ""},
	{32, "ECC_ENABLED", ""},
	{33, "PCI_BUS_ID", ""},
	{34, "PCI_DEVICE_ID", ""},
	{35, "TCC_DRIVER", ""},
	{36, "MEMORY_CLOCK_RATE", "kHz"},
	{37, "GLOBAL_MEMORY_BUS_WIDTH", "bits"},
	{38, "L2_CACHE_SIZE", "bytes"},
	{39, "MAX_THREADS_PER_MULTIPROCESSOR", "threads"},
	{40, "ASYNC_ENGINE_COUNT", ""},
	{41, "UNIFIED_ADDRESSING", ""},
	{42, "MAXIMUM_TEXTURE1D_LAYERED_WIDTH", ""},
	{43, "MAXIMUM_TEXTURE1D_LAYERED_LAYERS", ""},
	{44, "CAN_TEX2D_GATHER", ""},
	{45, "MAXIMUM_TEXTURE2D_GATHER_WIDTH", ""},
	{46, "MAXIMUM_TEXTURE2D_GATHER_HEIGHT", ""},
	{47, "MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE", ""},
	{48, "MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE", ""},
	{49, "MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE", ""},
	{50, "PCI_DOMAIN_ID", ""},
	{51, "TEXTURE_PITCH_ALIGNMENT", "bytes"},
	{52, "MAXIMUM_TEXTURECUBEMAP_WIDTH", ""},
	{53, "MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH", ""},
	{54, "MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS", ""},
	{55, "MAXIMUM_SURFACE1D_WIDTH", ""},
	{56, "MAXIMUM_SURFACE2D_WIDTH", ""},
	{57, "MAXIMUM_SURFACE2D_HEIGHT", ""},
	{58, "MAXIMUM_SURFACE3D_WIDTH", ""},
	{59, "MAXIMUM_SURFACE3D_HEIGHT", ""},
	{60, "MAXIMUM_SURFACE3D_DEPTH", ""},
	{61, "MAXIMUM_SURFACE1D_LAYERED_WIDTH", ""},
	{62, "MAXIMUM_SURFACE1D_LAYERED_LAYERS", ""},
	{63, "MAXIMUM_SURFACE2D_LAYERED_WIDTH", ""},
	{64, "MAXIMUM_SURFACE2D_LAYERED_HEIGHT", ""},
	{65, "MAXIMUM_SURFACE2D_LAYERED_LAYERS", ""},
	{66, "MAXIMUM_SURFACECUBEMAP_WIDTH", ""},
	{67, "MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH", ""},
	{68, "MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS", ""},
	{69, "MAXIMUM_TEXTURE1D_LINEAR_WIDTH", ""},
	{70, "MAXIMUM_TEXTURE2D_LINEAR_WIDTH", ""},
	{71, "MAXIMUM_TEXTURE2D_LINEAR_HEIGHT", ""},
	{72, "MAXIMUM_TEXTURE2D_LINEAR_PITCH", "bytes"},
	{73, "MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH", ""},
	{74, "MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT", ""},
	{75, "COMPUTE_CAPABILITY_MAJOR", ""},
	{76, "COMPUTE_CAPABILITY_MINOR", ""},
	{77, "MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH", ""},
	{78, "STREAM_PRIORITIES_SUPPORTED", ""},
	{79, "GLOBAL_L1_CACHE_SUPPORTED", ""},
	{80, "LOCAL_L1_CACHE_SUPPORTED", ""},
	{81, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", "bytes"},
	{82, "MAX_REGISTERS_PER_MULTIPROCESSOR", "registers"},
	{83, "MANAGED_MEMORY", ""},
	{84, "MULTI_GPU_BOARD", ""},
	{85, "MULTI_GPU_BOARD_GROUP_ID", ""},
	{86, "HOST_NATIVE_ATOMIC_SUPPORTED", ""},
	{87, "SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO", ""},
	{88, "PAGEABLE_MEMORY_ACCESS", ""},
	{89, "CONCURRENT_MANAGED_ACCESS", ""},
	{90, "COMPUTE_PREEMPTION_SUPPORTED", ""},
	{91, "CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM", ""},
	{92, "CAN_USE_STREAM_MEM_OPS_V1", ""},
	{93, "CAN_USE_64_BIT_STREAM_MEM_OPS_V1", ""},
	{94, "CAN_USE_STREAM_WAIT_VALUE_NOR_V1", ""},
	{95, "COOPERATIVE_LAUNCH", ""},
	{96, "COOPERATIVE_MULTI_DEVICE_LAUNCH", ""},
	{97, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", "bytes"},
	{98, "CAN_FLUSH_REMOTE_WRITES", ""},
	{99, "HOST_REGISTER_SUPPORTED", ""},
	{100, "PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES", ""},
	{101, "DIRECT_MANAGED_MEM_ACCESS_FROM_HOST", ""},
	{102, "VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", ""},
	{103, "HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED", ""},
	{104, "HANDLE_TYPE_WIN32_HANDLE_SUPPORTED", ""},
	{105, "HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED", ""},
	{106, "MAX_BLOCKS_PER_MULTIPROCESSOR", "blocks"},
	{107, "GENERIC_COMPRESSION_SUPPORTED", ""},
	{108, "MAX_PERSISTING_L2_CACHE_SIZE", "bytes"},
	{109, "MAX_ACCESS_POLICY_WINDOW_SIZE", "bytes"},
	{110, "GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED", ""},
	{111, "RESERVED_SHARED_MEMORY_PER_BLOCK", "bytes"},
	{112, "SPARSE_CUDA_ARRAY_SUPPORTED", ""},
	{113, "READ_ONLY_HOST_REGISTER_SUPPORTED", ""},
	{114, "TIMELINE_SEMAPHORE_INTEROP_SUPPORTED", ""},
	{115, "MEMORY_POOLS_SUPPORTED", ""},
	{116, "GPU_DIRECT_RDMA_SUPPORTED", ""},
	{117, "GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS", ""},
	{118, "GPU_DIRECT_RDMA_WRITES_ORDERING", ""},
	{119, "MEMPOOL_SUPPORTED_HANDLE_TYPES", ""},
	{120, "CLUSTER_LAUNCH", ""},
	{121, "DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED", ""},
	{122, "CAN_USE_64_BIT_STREAM_MEM_OPS", ""},
	{123, "CAN_USE_STREAM_WAIT_VALUE_NOR", ""},
	{124, "DMA_BUF_SUPPORTED", ""},
	{125, "IPC_EVENT_SUPPORTED", ""},
	{126, "MEM_SYNC_DOMAIN_COUNT", ""},
	{127, "TENSOR_MAP_ACCESS_SUPPORTED", ""},
	{128, "HANDLE_TYPE_FABRIC_SUPPORTED", ""},
	{129, "UNIFIED_FUNCTION_POINTERS", ""},
	{130, "NUMA_CONFIG", ""},
	{131, "NUMA_ID", ""},
	{132, "MULTICAST_SUPPORTED", ""},
	{133, "MPS_ENABLED", ""},
	{134, "HOST_NUMA_ID", ""},
	{135, "D3D12_CIG_SUPPORTED", ""},
	{136, "MEM_DECOMPRESS_ALGORITHM_MASK", ""},
	{137, "MEM_DECOMPRESS_MAXIMUM_LENGTH", "bytes"},
	{138, "VULKAN_CIG_SUPPORTED", ""},
	{139, "GPU_PCI_DEVICE_ID", ""},
	{140, "GPU_PCI_SUBSYSTEM_ID", ""},
	{141, "HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", ""},
	{142, "HOST_NUMA_MEMORY_POOLS_SUPPORTED", ""},
	{143, "HOST_NUMA_MULTINODE_IPC_SUPPORTED", ""},
	{144, "HOST_MEMORY_POOLS_SUPPORTED", ""},
	{145, "HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", ""},
	{146, "HOST_ALLOC_DMA_BUF_SUPPORTED", ""},
	{147, "ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED", ""},
	{148, "ATOMIC_REDUCTION_SUPPORTED", ""},
}

// unnamedAttrProbe is how far past the table Attributes asks, so that a newer driver's
// attributes still show up (named by number) before this table learns their names.
const unnamedAttrProbe = 16

// The attributes DeviceInfo reads.
const (
	attrMaxThreadsPerBlock           = 1
	attrMaxSharedMemoryPerBlock      = 8
	attrWarpSize                     = 10
	attrClockRate                    = 13
	attrMultiprocessorCount          = 16
	attrMemoryClockRate              = 36
	attrGlobalMemoryBusWidth         = 37
	attrL2CacheSize                  = 38
	attrComputeCapabilityMajor       = 75
	attrComputeCapabilityMinor       = 76
	attrMaxSharedMemoryPerBlockOptin = 97

	// What sharing buffers between processes needs (shared.go).
	attrVirtualMemoryManagementSupported       = 102
	attrHandleTypePosixFileDescriptorSupported = 103
)

func attributeName(id int) string {
	if id >= 1 && id <= len(deviceAttrs) {
		return deviceAttrs[id-1].name
	}
	return fmt.Sprintf("attribute %d", id)
}

// readAttributes asks the driver for every attribute in enum order. An attribute the driver does
// not know (CUDA_ERROR_INVALID_VALUE: an older driver) or does not support on this device
// (CUDA_ERROR_NOT_SUPPORTED) is left out; any other failure is an error.
func readAttributes(d C.CUdevice) ([]gpu.Attribute, error) {
	var out []gpu.Attribute
	last := deviceAttrs[len(deviceAttrs)-1].id
	for id := 1; id <= last+unnamedAttrProbe; id++ {
		var v C.int
		r := C.kl_device_attribute(&v, C.int(id), d)
		switch r {
		case cudaSuccess:
		case cudaErrorInvalidValue, cudaErrorNotSupported:
			continue
		default:
			return nil, fmt.Errorf("reading %s: %w", attributeName(id), callError("cuDeviceGetAttribute", r))
		}
		a := gpu.Attribute{Name: fmt.Sprintf("UNNAMED_%d", id), Value: int64(v)}
		if id <= last {
			a.Name, a.Unit = deviceAttrs[id-1].name, deviceAttrs[id-1].unit
		}
		out = append(out, a)
	}
	return out, nil
}
