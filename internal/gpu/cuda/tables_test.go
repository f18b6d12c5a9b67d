//go:build cgo && linux

package cuda

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// These tests need no GPU: they check the tables and formatting helpers.

func TestDeviceAttrTableIsEnumOrder(t *testing.T) {
	seen := map[string]bool{}
	for i, a := range deviceAttrs {
		assert.Equal(t, i+1, a.id, "entry %d (%s) out of enum order", i, a.name)
		assert.False(t, seen[a.name], "duplicate name %s", a.name)
		seen[a.name] = true
	}
	// Spot checks against cuda.h.
	for id, name := range map[int]string{
		attrMaxThreadsPerBlock:           "MAX_THREADS_PER_BLOCK",
		attrMultiprocessorCount:          "MULTIPROCESSOR_COUNT",
		attrL2CacheSize:                  "L2_CACHE_SIZE",
		attrComputeCapabilityMajor:       "COMPUTE_CAPABILITY_MAJOR",
		attrMaxSharedMemoryPerBlockOptin: "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
		120:                              "CLUSTER_LAUNCH",
		127:                              "TENSOR_MAP_ACCESS_SUPPORTED",
	} {
		assert.Equal(t, name, attributeName(id))
	}
	assert.Equal(t, "kHz", deviceAttrs[attrClockRate-1].unit)
	assert.Equal(t, "bits", deviceAttrs[attrGlobalMemoryBusWidth-1].unit)
	assert.Equal(t, "bytes", deviceAttrs[attrL2CacheSize-1].unit)
}

func TestStickyCodes(t *testing.T) {
	for _, code := range []int{700, 702, 714, 715, 716, 717, 718, 719} {
		assert.Contains(t, stickyCodes, code)
	}
	for _, code := range []int{1, 2, 100, 200, 701, 704} { // invalid value, OOM, no device, bad image, too many resources, peer enabled
		assert.NotContains(t, stickyCodes, code)
	}
}

func TestDriverVersionString(t *testing.T) {
	assert.Equal(t, "13.0", driverVersionString(13000))
	assert.Equal(t, "12.4", driverVersionString(12040))
	assert.Equal(t, "12.10", driverVersionString(12100))
}

func TestUUIDString(t *testing.T) {
	b := []byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	assert.Equal(t, "GPU-12345678-9abc-def0-0123-456789abcdef", uuidString(b))
	assert.Equal(t, "", uuidString(b[:3]))
}

func TestCudaDataType(t *testing.T) {
	assertTypeCodes(t, cudaDataType, map[gpu.DataType]int{gpu.F32: 0, gpu.F64: 1, gpu.F16: 2, gpu.BF16: 14})
}

// assertTypeCodes checks a library's code for each element type it takes, and that it refuses
// a type it does not know.
func assertTypeCodes[Code ~int32](t *testing.T, code func(gpu.DataType) (Code, error), want map[gpu.DataType]int) {
	t.Helper()
	for typ, w := range want {
		got, err := code(typ)
		require.NoError(t, err)
		assert.Equal(t, w, int(got), "%v", typ)
	}
	_, err := code(gpu.DataType(42))
	assert.Error(t, err)
}

func TestGemmDims(t *testing.T) {
	d, err := gemmDims(gpu.GemmDesc{M: 1, N: 2, K: 3, LDA: 4, LDB: 5, LDC: 6})
	require.NoError(t, err)
	assert.Equal(t, [6]int{1, 2, 3, 4, 5, 6}, [6]int{int(d[0]), int(d[1]), int(d[2]), int(d[3]), int(d[4]), int(d[5])})
	_, err = gemmDims(gpu.GemmDesc{M: 1 << 31, N: 1, K: 1, LDA: 1, LDB: 1, LDC: 1})
	assert.ErrorContains(t, err, "out of range")
	_, err = gemmDims(gpu.GemmDesc{M: -1})
	assert.Error(t, err)
}

func TestCublasCandidates(t *testing.T) {
	t.Setenv(CublasEnv, "/opt/x/libcublas.so.13")
	t.Setenv("CUDA_HOME", "/opt/cuda")
	c := cublasLib.candidates()
	require.NotEmpty(t, c)
	assert.Equal(t, "/opt/x/libcublas.so.13", c[0], "the override comes first")
	assert.Equal(t, "libcublas.so.13", c[1], "then the newest soname")
	assert.Contains(t, c, "/opt/cuda/lib64/libcublas.so.12")
}

func TestPinnedTable(t *testing.T) {
	tab := pinnedTable{m: map[uintptr]int64{}}
	buf := make([]byte, 64)
	p := unsafe.Pointer(&buf[0])
	tab.add(p, 32)
	assert.True(t, tab.contains(p, 32))
	assert.True(t, tab.contains(unsafe.Pointer(&buf[8]), 16))
	assert.False(t, tab.contains(unsafe.Pointer(&buf[8]), 32), "runs past the end")
	assert.False(t, tab.contains(unsafe.Pointer(&buf[40]), 4))
	tab.remove(p)
	assert.False(t, tab.contains(p, 1))
}
