//go:build cgo && linux

// shim.c: loads libcuda and libcublas with dlopen and wraps the calls this package makes.
//
// Why wrappers in C rather than calling the function pointers from Go: a CUDA context is current
// per OS thread, and a goroutine can move to another thread between two cgo calls. Each wrapper
// below sets the context and makes the API call inside one C call, on one thread.

#include <dlfcn.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shim.h"

// ---- enum values used here (from cuda.h and cublas_api.h) ----
#define CU_STREAM_DEFAULT 0x0       // CUstream_flags: a blocking stream, ordered with the NULL stream
#define CU_EVENT_DEFAULT 0x0        // CUevent_flags: timing enabled
#define CUBLAS_POINTER_MODE_HOST 0  // cublasPointerMode_t: alpha and beta are host values
#define CUBLAS_DEFAULT_MATH 0       // cublasMath_t; see kl_cublas_create
#define CUBLAS_COMPUTE_32F 68       // cublasComputeType_t: FP32 accumulation
#define CUBLAS_GEMM_DEFAULT (-1)    // cublasGemmAlgo_t: let cuBLAS pick

// ---- the driver's function table ----
static struct {
    void *lib;
    CUresult (*cuInit)(unsigned int);
    CUresult (*cuDriverGetVersion)(int *);
    CUresult (*cuDeviceGetCount)(int *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetName)(char *, int, CUdevice);
    CUresult (*cuDeviceGetUuid)(CUuuid *, CUdevice); // cuDeviceGetUuid_v2, else cuDeviceGetUuid
    CUresult (*cuDeviceGetPCIBusId)(char *, int, CUdevice);
    CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*cuDeviceTotalMem_v2)(size_t *, CUdevice);
    CUresult (*cuDeviceCanAccessPeer)(int *, CUdevice, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice);
    CUresult (*cuGetErrorName)(CUresult, const char **);
    CUresult (*cuGetErrorString)(CUresult, const char **);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuCtxEnablePeerAccess)(CUcontext, unsigned int);
    CUresult (*cuMemGetInfo_v2)(size_t *, size_t *);
    CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree_v2)(CUdeviceptr);
    CUresult (*cuMemAllocHost_v2)(void **, size_t);
    CUresult (*cuMemFreeHost)(void *);
    CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void *, size_t);
    CUresult (*cuMemcpyDtoH_v2)(void *, CUdeviceptr, size_t);
    CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*cuMemcpyDtoHAsync_v2)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*cuMemcpyDtoDAsync_v2)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*cuMemcpyPeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
    CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream);
    CUresult (*cuModuleLoad)(CUmodule *, const char *);
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuFuncGetParamInfo)(CUfunction, size_t, size_t *, size_t *); // CUDA 12.4+
    // CUDA 12.0+; the enum arguments are plain ints here (values in shim.h).
    CUresult (*cuTensorMapEncodeTiled)(void *, int, unsigned int, void *, const unsigned long long *,
                                       const unsigned long long *, const unsigned int *,
                                       const unsigned int *, int, int, int, int);
    CUresult (*cuFuncGetAttribute)(int *, int, CUfunction);
    CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction, int, size_t);
    CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **, void **);
    CUresult (*cuStreamCreate)(CUstream *, unsigned int);
    CUresult (*cuStreamDestroy_v2)(CUstream);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned int);
    // Stream memory operations (CUDA 8+, the _v2 names from CUDA 11.7), optional: the timing hold.
    CUresult (*cuStreamWaitValue32)(CUstream, CUdeviceptr, unsigned int, unsigned int);
    CUresult (*cuStreamWriteValue32)(CUstream, CUdeviceptr, unsigned int, unsigned int);
    CUresult (*cuEventCreate)(CUevent *, unsigned int);
    CUresult (*cuEventDestroy_v2)(CUevent);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventSynchronize)(CUevent);
    CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent); // _v2 on CUDA 13, else the plain one
    // Virtual memory management (CUDA 10.2+), optional: buffers shared between processes.
    CUresult (*cuMemGetAllocationGranularity)(size_t *, const kl_mem_prop *, int);
    CUresult (*cuMemCreate)(unsigned long long *, size_t, const kl_mem_prop *, unsigned long long);
    CUresult (*cuMemRelease)(unsigned long long);
    CUresult (*cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*cuMemAddressFree)(CUdeviceptr, size_t);
    CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, unsigned long long, unsigned long long);
    CUresult (*cuMemUnmap)(CUdeviceptr, size_t);
    CUresult (*cuMemSetAccess)(CUdeviceptr, size_t, const kl_mem_access *, size_t);
    CUresult (*cuMemExportToShareableHandle)(void *, unsigned long long, int, unsigned long long);
    CUresult (*cuMemImportFromShareableHandle)(unsigned long long *, void *, int);
    // Stream capture and graphs (CUDA 11.4+), optional.
    CUresult (*cuStreamBeginCapture)(CUstream, int); // cuStreamBeginCapture_v2
    CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
    CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
    CUresult (*cuGraphExecDestroy)(CUgraphExec);
    CUresult (*cuGraphDestroy)(CUgraph);
} cu;

static char *dup_err(const char *prefix, const char *detail) {
    size_t n = strlen(prefix) + (detail ? strlen(detail) : 0) + 1;
    char *s = malloc(n);
    if (s) {
        strcpy(s, prefix);
        if (detail) strcat(s, detail);
    }
    return s;
}

void kl_free_err(char *err) { free(err); }

// sym resolves the first of up to two names the library exports.
static void *sym(void *lib, const char *name, const char *fallback) {
    void *p = dlsym(lib, name);
    if (!p && fallback) p = dlsym(lib, fallback);
    return p;
}

// open_once opens path for a table whose handle is *loaded: -1 when the file cannot be opened,
// 1 when the table is already loaded from the same library, -2 when from another one, and 0 with
// *lib set when the table still needs loading.
static int open_once(const char *path, void *loaded, void **lib, char **err) {
    *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!*lib) {
        *err = dup_err("", dlerror());
        return -1;
    }
    if (!loaded) return 0;
    int same = *lib == loaded;
    dlclose(*lib); // drop the reference this call took
    if (same) return 1;
    *err = dup_err("another copy of the library is already loaded in this process", NULL);
    return -2;
}

int kl_cuda_load(const char *path, char **err) {
    void *lib;
    int r = open_once(path, cu.lib, &lib, err);
    if (r != 0) return r > 0 ? 0 : r;
    // Required symbols: every driver since CUDA 11 exports them.
#define REQ(field, name, fallback)                                   \
    do {                                                             \
        *(void **)(&cu.field) = sym(lib, name, fallback);            \
        if (!cu.field) {                                             \
            *err = dup_err("the driver library lacks ", name);       \
            memset(&cu, 0, sizeof cu);                               \
            dlclose(lib);                                            \
            return -1;                                               \
        }                                                            \
    } while (0)
    REQ(cuInit, "cuInit", NULL);
    REQ(cuDriverGetVersion, "cuDriverGetVersion", NULL);
    REQ(cuDeviceGetCount, "cuDeviceGetCount", NULL);
    REQ(cuDeviceGet, "cuDeviceGet", NULL);
    REQ(cuDeviceGetName, "cuDeviceGetName", NULL);
    REQ(cuDeviceGetUuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid");
    REQ(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId", NULL);
    REQ(cuDeviceGetAttribute, "cuDeviceGetAttribute", NULL);
    REQ(cuDeviceTotalMem_v2, "cuDeviceTotalMem_v2", NULL);
    REQ(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer", NULL);
    REQ(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL);
    REQ(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
    REQ(cuGetErrorName, "cuGetErrorName", NULL);
    REQ(cuGetErrorString, "cuGetErrorString", NULL);
    REQ(cuCtxSetCurrent, "cuCtxSetCurrent", NULL);
    REQ(cuCtxSynchronize, "cuCtxSynchronize", NULL);
    REQ(cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess", NULL);
    REQ(cuMemGetInfo_v2, "cuMemGetInfo_v2", NULL);
    REQ(cuMemAlloc_v2, "cuMemAlloc_v2", NULL);
    REQ(cuMemFree_v2, "cuMemFree_v2", NULL);
    REQ(cuMemAllocHost_v2, "cuMemAllocHost_v2", NULL);
    REQ(cuMemFreeHost, "cuMemFreeHost", NULL);
    REQ(cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2", NULL);
    REQ(cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2", NULL);
    REQ(cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync_v2", NULL);
    REQ(cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync_v2", NULL);
    REQ(cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync_v2", NULL);
    REQ(cuMemcpyPeerAsync, "cuMemcpyPeerAsync", NULL);
    REQ(cuMemsetD8Async, "cuMemsetD8Async", NULL);
    REQ(cuMemsetD32Async, "cuMemsetD32Async", NULL);
    REQ(cuModuleLoad, "cuModuleLoad", NULL);
    REQ(cuModuleUnload, "cuModuleUnload", NULL);
    REQ(cuModuleGetFunction, "cuModuleGetFunction", NULL);
    REQ(cuFuncGetAttribute, "cuFuncGetAttribute", NULL);
    REQ(cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", NULL);
    REQ(cuFuncSetAttribute, "cuFuncSetAttribute", NULL);
    REQ(cuLaunchKernel, "cuLaunchKernel", NULL);
    REQ(cuStreamCreate, "cuStreamCreate", NULL);
    REQ(cuStreamDestroy_v2, "cuStreamDestroy_v2", NULL);
    REQ(cuStreamSynchronize, "cuStreamSynchronize", NULL);
    REQ(cuStreamWaitEvent, "cuStreamWaitEvent", NULL);
    REQ(cuEventCreate, "cuEventCreate", NULL);
    REQ(cuEventDestroy_v2, "cuEventDestroy_v2", NULL);
    REQ(cuEventRecord, "cuEventRecord", NULL);
    REQ(cuEventSynchronize, "cuEventSynchronize", NULL);
    // CUDA 13's cuda.h maps cuEventElapsedTime to cuEventElapsedTime_v2 (same signature).
    REQ(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
#undef REQ
    // Optional: drivers older than CUDA 12.4 lack it, and Kernel.Params says so.
    *(void **)(&cu.cuFuncGetParamInfo) = dlsym(lib, "cuFuncGetParamInfo");
    *(void **)(&cu.cuTensorMapEncodeTiled) = dlsym(lib, "cuTensorMapEncodeTiled");
#define OPT(field, name) *(void **)(&cu.field) = dlsym(lib, name)
    OPT(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity");
    OPT(cuMemCreate, "cuMemCreate");
    OPT(cuMemRelease, "cuMemRelease");
    OPT(cuMemAddressReserve, "cuMemAddressReserve");
    OPT(cuMemAddressFree, "cuMemAddressFree");
    OPT(cuMemMap, "cuMemMap");
    OPT(cuMemUnmap, "cuMemUnmap");
    OPT(cuMemSetAccess, "cuMemSetAccess");
    OPT(cuMemExportToShareableHandle, "cuMemExportToShareableHandle");
    OPT(cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle");
    *(void **)(&cu.cuStreamBeginCapture) = sym(lib, "cuStreamBeginCapture_v2", "cuStreamBeginCapture");
    OPT(cuStreamEndCapture, "cuStreamEndCapture");
    cu.cuStreamWaitValue32 = sym(lib, "cuStreamWaitValue32_v2", "cuStreamWaitValue32");
    cu.cuStreamWriteValue32 = sym(lib, "cuStreamWriteValue32_v2", "cuStreamWriteValue32");
    OPT(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    OPT(cuGraphLaunch, "cuGraphLaunch");
    OPT(cuGraphExecDestroy, "cuGraphExecDestroy");
    OPT(cuGraphDestroy, "cuGraphDestroy");
#undef OPT
    cu.lib = lib;
    return 0;
}

int kl_has_func_param_info(void) { return cu.cuFuncGetParamInfo != NULL; }

// ---- context-free calls ----
CUresult kl_init(void) { return cu.cuInit(0); }
CUresult kl_driver_version(int *v) { return cu.cuDriverGetVersion(v); }
CUresult kl_device_count(int *n) { return cu.cuDeviceGetCount(n); }
CUresult kl_device_get(CUdevice *d, int ordinal) { return cu.cuDeviceGet(d, ordinal); }
CUresult kl_device_name(char *name, int len, CUdevice d) { return cu.cuDeviceGetName(name, len, d); }
CUresult kl_device_uuid(CUuuid *uuid, CUdevice d) { return cu.cuDeviceGetUuid(uuid, d); }
CUresult kl_device_pci_bus_id(char *id, int len, CUdevice d) { return cu.cuDeviceGetPCIBusId(id, len, d); }
CUresult kl_device_attribute(int *v, int attr, CUdevice d) { return cu.cuDeviceGetAttribute(v, attr, d); }
CUresult kl_device_total_mem(size_t *bytes, CUdevice d) { return cu.cuDeviceTotalMem_v2(bytes, d); }
CUresult kl_device_can_access_peer(int *can, CUdevice d, CUdevice peer) {
    return cu.cuDeviceCanAccessPeer(can, d, peer);
}
CUresult kl_primary_ctx_retain(CUcontext *ctx, CUdevice d) { return cu.cuDevicePrimaryCtxRetain(ctx, d); }
CUresult kl_primary_ctx_release(CUdevice d) { return cu.cuDevicePrimaryCtxRelease_v2(d); }

const char *kl_error_name(CUresult r) {
    const char *s = NULL;
    if (!cu.cuGetErrorName || cu.cuGetErrorName(r, &s) != 0) return NULL;
    return s;
}

const char *kl_error_string(CUresult r) {
    const char *s = NULL;
    if (!cu.cuGetErrorString || cu.cuGetErrorString(r, &s) != 0) return NULL;
    return s;
}

// ---- calls made with a context current ----
// SET_CTX makes ctx current on this thread. A failure to do so is returned as the wrapped call's
// failure: it can only be a context that is already broken.
#define SET_CTX(ctx)                                  \
    do {                                              \
        CUresult r_ = cu.cuCtxSetCurrent(ctx);        \
        if (r_ != 0) return r_;                       \
    } while (0)

CUresult kl_ctx_synchronize(CUcontext ctx) {
    SET_CTX(ctx);
    return cu.cuCtxSynchronize();
}

CUresult kl_ctx_enable_peer_access(CUcontext ctx, CUcontext peer) {
    SET_CTX(ctx);
    return cu.cuCtxEnablePeerAccess(peer, 0);
}

CUresult kl_mem_get_info(CUcontext ctx, size_t *free_bytes, size_t *total) {
    SET_CTX(ctx);
    return cu.cuMemGetInfo_v2(free_bytes, total);
}

CUresult kl_mem_alloc(CUcontext ctx, CUdeviceptr *p, size_t bytes) {
    SET_CTX(ctx);
    return cu.cuMemAlloc_v2(p, bytes);
}

CUresult kl_mem_free(CUcontext ctx, CUdeviceptr p) {
    SET_CTX(ctx);
    return cu.cuMemFree_v2(p);
}

CUresult kl_mem_alloc_host(CUcontext ctx, void **p, size_t bytes) {
    SET_CTX(ctx);
    return cu.cuMemAllocHost_v2(p, bytes);
}

CUresult kl_mem_free_host(CUcontext ctx, void *p) {
    SET_CTX(ctx);
    return cu.cuMemFreeHost(p);
}

CUresult kl_memcpy_htod(CUcontext ctx, CUdeviceptr dst, const void *src, size_t bytes, CUstream s, int async) {
    SET_CTX(ctx);
    return async ? cu.cuMemcpyHtoDAsync_v2(dst, src, bytes, s) : cu.cuMemcpyHtoD_v2(dst, src, bytes);
}

CUresult kl_memcpy_dtoh(CUcontext ctx, void *dst, CUdeviceptr src, size_t bytes, CUstream s, int async) {
    SET_CTX(ctx);
    return async ? cu.cuMemcpyDtoHAsync_v2(dst, src, bytes, s) : cu.cuMemcpyDtoH_v2(dst, src, bytes);
}

CUresult kl_memcpy_dtod(CUcontext ctx, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
    SET_CTX(ctx);
    return cu.cuMemcpyDtoDAsync_v2(dst, src, bytes, s);
}

CUresult kl_memcpy_peer(CUcontext ctx, CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                        CUcontext src_ctx, size_t bytes, CUstream s) {
    SET_CTX(ctx);
    return cu.cuMemcpyPeerAsync(dst, dst_ctx, src, src_ctx, bytes, s);
}

CUresult kl_memset_d8(CUcontext ctx, CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
    SET_CTX(ctx);
    return cu.cuMemsetD8Async(dst, v, n, s);
}

CUresult kl_memset_d32(CUcontext ctx, CUdeviceptr dst, unsigned int v, size_t n, CUstream s) {
    SET_CTX(ctx);
    return cu.cuMemsetD32Async(dst, v, n, s);
}

CUresult kl_module_load(CUcontext ctx, CUmodule *m, const char *path) {
    SET_CTX(ctx);
    return cu.cuModuleLoad(m, path);
}

CUresult kl_module_unload(CUcontext ctx, CUmodule m) {
    SET_CTX(ctx);
    return cu.cuModuleUnload(m);
}

CUresult kl_module_get_function(CUcontext ctx, CUfunction *f, CUmodule m, const char *name) {
    SET_CTX(ctx);
    return cu.cuModuleGetFunction(f, m, name);
}

CUresult kl_tensor_map_encode_tiled(CUcontext ctx, void *map, int dtype, unsigned rank, CUdeviceptr global,
                                    const unsigned long long *dims, const unsigned long long *strides,
                                    const unsigned *box, const unsigned *elem_strides, int swizzle,
                                    int l2promo, int oobfill) {
    if (!cu.cuTensorMapEncodeTiled) return KL_MISSING_SYMBOL;
    SET_CTX(ctx);
    return cu.cuTensorMapEncodeTiled(map, dtype, rank, (void *)(uintptr_t)global, dims, strides, box, elem_strides,
                                     0 /* CU_TENSOR_MAP_INTERLEAVE_NONE */, swizzle, l2promo, oobfill);
}

CUresult kl_func_param_info(CUcontext ctx, CUfunction f, size_t index, size_t *offset, size_t *size) {
    if (!cu.cuFuncGetParamInfo) return KL_MISSING_SYMBOL;
    SET_CTX(ctx);
    return cu.cuFuncGetParamInfo(f, index, offset, size);
}

CUresult kl_func_get_attribute(CUcontext ctx, int *v, int attr, CUfunction f) {
    SET_CTX(ctx);
    return cu.cuFuncGetAttribute(v, attr, f);
}

CUresult kl_occupancy_blocks_per_sm(CUcontext ctx, int *n, CUfunction f, int block, size_t dyn_smem) {
    SET_CTX(ctx);
    return cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(n, f, block, dyn_smem);
}

CUresult kl_func_set_attribute(CUcontext ctx, CUfunction f, int attr, int v) {
    SET_CTX(ctx);
    return cu.cuFuncSetAttribute(f, attr, v);
}

CUresult kl_launch(CUcontext ctx, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                   unsigned bx, unsigned by, unsigned bz, unsigned shared, CUstream s, void **params) {
    SET_CTX(ctx);
    return cu.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, s, params, NULL);
}

CUresult kl_stream_create(CUcontext ctx, CUstream *s) {
    SET_CTX(ctx);
    return cu.cuStreamCreate(s, CU_STREAM_DEFAULT);
}

// A stream that never waits for the legacy default stream (CU_STREAM_NON_BLOCKING): the hold's
// release must get through even while a synchronous copy waits behind the held stream.
CUresult kl_stream_create_nonblocking(CUcontext ctx, CUstream *s) {
    SET_CTX(ctx);
    return cu.cuStreamCreate(s, 0x1);
}

CUresult kl_stream_destroy(CUcontext ctx, CUstream s) {
    SET_CTX(ctx);
    return cu.cuStreamDestroy_v2(s);
}

CUresult kl_stream_wait_event(CUcontext ctx, CUstream s, CUevent e) {
    SET_CTX(ctx);
    return cu.cuStreamWaitEvent(s, e, 0);
}

// The hold of gpu.Holder: s waits until *word ≥ v (CU_STREAM_WAIT_VALUE_GEQ, 0), and another
// stream writes v there (CU_STREAM_WRITE_VALUE_DEFAULT, 0). CUDA_ERROR_NOT_SUPPORTED (801) when the
// driver lacks them.
CUresult kl_stream_wait_value(CUcontext ctx, CUstream s, CUdeviceptr word, unsigned int v) {
    if (!cu.cuStreamWaitValue32) return 801;
    SET_CTX(ctx);
    return cu.cuStreamWaitValue32(s, word, v, 0);
}

CUresult kl_stream_write_value(CUcontext ctx, CUstream s, CUdeviceptr word, unsigned int v) {
    if (!cu.cuStreamWriteValue32) return 801;
    SET_CTX(ctx);
    return cu.cuStreamWriteValue32(s, word, v, 0);
}

CUresult kl_stream_synchronize(CUcontext ctx, CUstream s) {
    SET_CTX(ctx);
    return cu.cuStreamSynchronize(s);
}

CUresult kl_event_create(CUcontext ctx, CUevent *e) {
    SET_CTX(ctx);
    return cu.cuEventCreate(e, CU_EVENT_DEFAULT);
}

CUresult kl_event_destroy(CUcontext ctx, CUevent e) {
    SET_CTX(ctx);
    return cu.cuEventDestroy_v2(e);
}

CUresult kl_event_record(CUcontext ctx, CUevent e, CUstream s) {
    SET_CTX(ctx);
    return cu.cuEventRecord(e, s);
}

CUresult kl_event_synchronize(CUcontext ctx, CUevent e) {
    SET_CTX(ctx);
    return cu.cuEventSynchronize(e);
}

CUresult kl_event_elapsed(CUcontext ctx, float *ms, CUevent start, CUevent end) {
    SET_CTX(ctx);
    return cu.cuEventElapsedTime(ms, start, end);
}

// ---- virtual memory management: buffers other processes map (memory.go's Sharer) ----
#define CU_MEM_ALLOCATION_TYPE_PINNED 0x1
#define CU_MEM_LOCATION_TYPE_DEVICE 0x1
#define CU_MEM_ACCESS_FLAGS_PROT_READWRITE 0x3
#define CU_MEM_ALLOC_GRANULARITY_MINIMUM 0x0

static kl_mem_prop vmm_prop(CUdevice dev, int handle_type) {
    kl_mem_prop prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requested_handle_types = handle_type;
    prop.location_type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location_id = dev;
    return prop;
}

static int vmm_loaded(void) {
    return cu.cuMemGetAllocationGranularity && cu.cuMemCreate && cu.cuMemRelease && cu.cuMemAddressReserve &&
           cu.cuMemAddressFree && cu.cuMemMap && cu.cuMemUnmap && cu.cuMemSetAccess &&
           cu.cuMemExportToShareableHandle && cu.cuMemImportFromShareableHandle;
}

#define VMM_CALL(name, call)      \
    do {                          \
        r = (call);               \
        if (r != 0) {             \
            *failed = name;       \
            goto fail;            \
        }                         \
    } while (0)

// vmm_map reserves an address range for handle, maps it and gives dev read-write access.
static CUresult vmm_map(CUdevice dev, unsigned long long handle, size_t size, size_t align, CUdeviceptr *p,
                        const char **failed) {
    CUresult r;
    CUdeviceptr va = 0;
    int mapped = 0;
    VMM_CALL("cuMemAddressReserve", cu.cuMemAddressReserve(&va, size, align, 0, 0));
    VMM_CALL("cuMemMap", cu.cuMemMap(va, size, 0, handle, 0));
    mapped = 1;
    kl_mem_access acc;
    memset(&acc, 0, sizeof acc);
    acc.location_type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location_id = dev;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    VMM_CALL("cuMemSetAccess", cu.cuMemSetAccess(va, size, &acc, 1));
    *p = va;
    return 0;
fail:
    if (mapped) cu.cuMemUnmap(va, size);
    if (va) cu.cuMemAddressFree(va, size);
    return r;
}

CUresult kl_vmm_granularity(CUdevice dev, int handle_type, size_t *g) {
    if (!vmm_loaded()) return KL_MISSING_SYMBOL;
    kl_mem_prop prop = vmm_prop(dev, handle_type);
    return cu.cuMemGetAllocationGranularity(g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
}

CUresult kl_vmm_alloc(CUcontext ctx, CUdevice dev, int handle_type, size_t size, size_t align, CUdeviceptr *p,
                      unsigned long long *handle, const char **failed) {
    if (!vmm_loaded()) {
        *failed = "cuMemCreate";
        return KL_MISSING_SYMBOL;
    }
    SET_CTX(ctx);
    CUresult r;
    *handle = 0;
    kl_mem_prop prop = vmm_prop(dev, handle_type);
    VMM_CALL("cuMemCreate", cu.cuMemCreate(handle, size, &prop, 0));
    if ((r = vmm_map(dev, *handle, size, align, p, failed)) != 0) goto fail;
    return 0;
fail:
    if (*handle) cu.cuMemRelease(*handle);
    *handle = 0;
    return r;
}

CUresult kl_vmm_export_fd(CUcontext ctx, unsigned long long handle, int handle_type, int *fd) {
    if (!vmm_loaded()) return KL_MISSING_SYMBOL;
    SET_CTX(ctx);
    return cu.cuMemExportToShareableHandle(fd, handle, handle_type, 0);
}

CUresult kl_vmm_import_fd(CUcontext ctx, CUdevice dev, int fd, int handle_type, size_t size, size_t align,
                          CUdeviceptr *p, unsigned long long *handle, const char **failed) {
    if (!vmm_loaded()) {
        *failed = "cuMemImportFromShareableHandle";
        return KL_MISSING_SYMBOL;
    }
    SET_CTX(ctx);
    CUresult r;
    *handle = 0;
    VMM_CALL("cuMemImportFromShareableHandle",
             cu.cuMemImportFromShareableHandle(handle, (void *)(uintptr_t)fd, handle_type));
    if ((r = vmm_map(dev, *handle, size, align, p, failed)) != 0) goto fail;
    return 0;
fail:
    if (*handle) cu.cuMemRelease(*handle);
    *handle = 0;
    return r;
}

CUresult kl_vmm_free(CUcontext ctx, CUdeviceptr p, size_t size, unsigned long long handle, const char **failed) {
    if (!vmm_loaded()) {
        *failed = "cuMemUnmap";
        return KL_MISSING_SYMBOL;
    }
    SET_CTX(ctx);
    // Release every part even after a failure, and report the first failure.
    CUresult first = 0, r;
    if ((r = cu.cuMemUnmap(p, size)) != 0 && !first) first = r, *failed = "cuMemUnmap";
    if ((r = cu.cuMemAddressFree(p, size)) != 0 && !first) first = r, *failed = "cuMemAddressFree";
    if ((r = cu.cuMemRelease(handle)) != 0 && !first) first = r, *failed = "cuMemRelease";
    return first;
}
#undef VMM_CALL

// ---- stream capture and graphs (stream.go's GraphCapturer) ----
#define CU_STREAM_CAPTURE_MODE_RELAXED 2

static int graphs_loaded(void) {
    return cu.cuStreamBeginCapture && cu.cuStreamEndCapture && cu.cuGraphInstantiateWithFlags && cu.cuGraphLaunch &&
           cu.cuGraphExecDestroy && cu.cuGraphDestroy;
}

CUresult kl_stream_begin_capture(CUcontext ctx, CUstream s) {
    if (!graphs_loaded()) return KL_MISSING_SYMBOL;
    SET_CTX(ctx);
    // Relaxed: goroutines move between OS threads, so the thread-based modes would judge the
    // calls of unrelated goroutines (or miss the capturing one's).
    return cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED);
}

CUresult kl_stream_end_capture(CUcontext ctx, CUstream s, CUgraph *g) {
    SET_CTX(ctx);
    return cu.cuStreamEndCapture(s, g);
}

CUresult kl_graph_instantiate(CUcontext ctx, CUgraphExec *e, CUgraph g) {
    SET_CTX(ctx);
    return cu.cuGraphInstantiateWithFlags(e, g, 0);
}

CUresult kl_graph_launch(CUcontext ctx, CUgraphExec e, CUstream s) {
    SET_CTX(ctx);
    return cu.cuGraphLaunch(e, s);
}

CUresult kl_graph_destroy(CUcontext ctx, CUgraphExec e, CUgraph g) {
    SET_CTX(ctx);
    CUresult r = e ? cu.cuGraphExecDestroy(e) : 0;
    CUresult r2 = g ? cu.cuGraphDestroy(g) : 0;
    return r ? r : r2;
}

// ---- cuBLAS ----
static struct {
    void *lib;
    cublasStatus_t (*create)(cublasHandle_t *);                // cublasCreate_v2
    cublasStatus_t (*destroy)(cublasHandle_t);                 // cublasDestroy_v2
    cublasStatus_t (*set_stream)(cublasHandle_t, CUstream);    // cublasSetStream_v2 (cudaStream_t)
    cublasStatus_t (*set_math_mode)(cublasHandle_t, int);      // cublasSetMathMode
    cublasStatus_t (*set_pointer_mode)(cublasHandle_t, int);   // cublasSetPointerMode_v2
    cublasStatus_t (*sgemm)(cublasHandle_t, int, int, int, int, int, const float *, const float *,
                            int, const float *, int, const float *, float *, int); // cublasSgemm_v2
    cublasStatus_t (*gemm_ex)(cublasHandle_t, int, int, int, int, int, const void *, const void *,
                              int, int, const void *, int, int, const void *, void *, int, int,
                              int, int); // cublasGemmEx
    // cublasGemmGroupedBatchedEx (cuBLAS 12.5+), optional; enum arguments as ints.
    cublasStatus_t (*gemm_grouped)(cublasHandle_t, const int *, const int *, const int *, const int *,
                                   const int *, const void *, const void *const *, int, const int *,
                                   const void *const *, int, const int *, const void *, void *const *,
                                   int, const int *, int, const int *, int);
    const char *(*status_name)(cublasStatus_t);   // cublasGetStatusName (cuBLAS 11.4+), optional
    const char *(*status_string)(cublasStatus_t); // cublasGetStatusString, optional
} cb;

int kl_cublas_load(const char *path, char **err) {
    void *lib;
    int r = open_once(path, cb.lib, &lib, err);
    if (r != 0) return r > 0 ? 0 : r;
#define REQ(field, name)                                          \
    do {                                                          \
        *(void **)(&cb.field) = dlsym(lib, name);                 \
        if (!cb.field) {                                          \
            *err = dup_err("the cuBLAS library lacks ", name);    \
            memset(&cb, 0, sizeof cb);                            \
            dlclose(lib);                                         \
            return -1;                                            \
        }                                                         \
    } while (0)
    REQ(create, "cublasCreate_v2");
    REQ(destroy, "cublasDestroy_v2");
    REQ(set_stream, "cublasSetStream_v2");
    REQ(set_math_mode, "cublasSetMathMode");
    REQ(set_pointer_mode, "cublasSetPointerMode_v2");
    REQ(sgemm, "cublasSgemm_v2");
    REQ(gemm_ex, "cublasGemmEx");
#undef REQ
    *(void **)(&cb.gemm_grouped) = dlsym(lib, "cublasGemmGroupedBatchedEx");
    *(void **)(&cb.status_name) = dlsym(lib, "cublasGetStatusName");
    *(void **)(&cb.status_string) = dlsym(lib, "cublasGetStatusString");
    cb.lib = lib;
    return 0;
}

const char *kl_cublas_status_name(cublasStatus_t s) { return cb.status_name ? cb.status_name(s) : NULL; }
const char *kl_cublas_status_string(cublasStatus_t s) { return cb.status_string ? cb.status_string(s) : NULL; }

// A cuBLAS failure to make the context current is reported with the driver's code, not a cuBLAS
// status; the two ranges overlap, so the wrappers name cuCtxSetCurrent in *failed.
#define CB_SET_CTX(ctx)                               \
    do {                                              \
        CUresult r_ = cu.cuCtxSetCurrent(ctx);        \
        if (r_ != 0) {                                \
            *failed = "cuCtxSetCurrent";              \
            return r_;                                \
        }                                             \
    } while (0)

#define CB_CALL(name, call)                           \
    do {                                              \
        cublasStatus_t st_ = (call);                  \
        if (st_ != 0) {                               \
            *failed = name;                           \
            return st_;                               \
        }                                             \
    } while (0)

cublasStatus_t kl_cublas_create(CUcontext ctx, cublasHandle_t *h, const char **failed) {
    CB_SET_CTX(ctx);
    CB_CALL("cublasCreate_v2", cb.create(h));
    // CUBLAS_DEFAULT_MATH, not CUBLAS_PEDANTIC_MATH: since cuBLAS 11 the default mode never uses
    // TF32 for FP32 routines (that needs CUBLAS_TF32_TENSOR_OP_MATH or a _FAST_TF32 compute type),
    // so Sgemm stays a true FP32 baseline; pedantic mode would also force GemmEx's COMPUTE_32F to
    // its _PEDANTIC form and keep bf16/fp16 products off the tensor cores, an unfair baseline.
    CB_CALL("cublasSetMathMode", cb.set_math_mode(*h, CUBLAS_DEFAULT_MATH));
    CB_CALL("cublasSetPointerMode_v2", cb.set_pointer_mode(*h, CUBLAS_POINTER_MODE_HOST));
    return 0;
}

cublasStatus_t kl_cublas_destroy(CUcontext ctx, cublasHandle_t h, const char **failed) {
    CB_SET_CTX(ctx);
    CB_CALL("cublasDestroy_v2", cb.destroy(h));
    return 0;
}

cublasStatus_t kl_cublas_sgemm(CUcontext ctx, cublasHandle_t h, CUstream s, int transa, int transb,
                               int m, int n, int k, float alpha, CUdeviceptr a, int lda,
                               CUdeviceptr b, int ldb, float beta, CUdeviceptr c, int ldc,
                               const char **failed) {
    CB_SET_CTX(ctx);
    CB_CALL("cublasSetStream_v2", cb.set_stream(h, s));
    CB_CALL("cublasSgemm_v2", cb.sgemm(h, transa, transb, m, n, k, &alpha, (const float *)a, lda,
                                       (const float *)b, ldb, &beta, (float *)c, ldc));
    return 0;
}

cublasStatus_t kl_cublas_gemm_ex(CUcontext ctx, cublasHandle_t h, CUstream s, int transa, int transb,
                                 int m, int n, int k, float alpha, CUdeviceptr a, int atype, int lda,
                                 CUdeviceptr b, int btype, int ldb, float beta, CUdeviceptr c,
                                 int ctype, int ldc, const char **failed) {
    CB_SET_CTX(ctx);
    CB_CALL("cublasSetStream_v2", cb.set_stream(h, s));
    // With CUBLAS_COMPUTE_32F, alpha and beta are floats.
    CB_CALL("cublasGemmEx", cb.gemm_ex(h, transa, transb, m, n, k, &alpha, (const void *)a, atype, lda,
                                       (const void *)b, btype, ldb, &beta, (void *)c, ctype, ldc,
                                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return 0;
}

cublasStatus_t kl_cublas_gemm_grouped_batched(CUcontext ctx, cublasHandle_t h, CUstream s,
                                              const int *transa, const int *transb, const int *m,
                                              const int *n, const int *k, const float *alpha,
                                              CUdeviceptr a, int atype, const int *lda, CUdeviceptr b,
                                              int btype, const int *ldb, const float *beta,
                                              CUdeviceptr c, int ctype, const int *ldc,
                                              int group_count, const int *group_size,
                                              const char **failed) {
    if (!cb.gemm_grouped) {
        *failed = "cublasGemmGroupedBatchedEx";
        return KL_MISSING_SYMBOL;
    }
    CB_SET_CTX(ctx);
    CB_CALL("cublasSetStream_v2", cb.set_stream(h, s));
    CB_CALL("cublasGemmGroupedBatchedEx",
            cb.gemm_grouped(h, transa, transb, m, n, k, alpha, (const void *const *)a, atype, lda,
                            (const void *const *)b, btype, ldb, beta, (void *const *)c, ctype, ldc,
                            group_count, group_size, CUBLAS_COMPUTE_32F));
    return 0;
}

// ---- cuBLASLt ----
// Enum values from cublasLt.h (CUDA 12.x / 13.0).
#define CUBLASLT_MATMUL_DESC_TRANSA 3
#define CUBLASLT_MATMUL_DESC_TRANSB 4
#define CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES 1
#define CUBLAS_STATUS_NOT_SUPPORTED 15
#define CUDA_R_32F 0

typedef void *cublasLtMatmulDesc_t;
typedef void *cublasLtMatrixLayout_t;
typedef void *cublasLtMatmulPreference_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct {
    cublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;

static struct {
    void *lib;
    cublasStatus_t (*create)(cublasLtHandle_t *);
    cublasStatus_t (*destroy)(cublasLtHandle_t);
    cublasStatus_t (*desc_create)(cublasLtMatmulDesc_t *, int, int);
    cublasStatus_t (*desc_destroy)(cublasLtMatmulDesc_t);
    cublasStatus_t (*desc_set)(cublasLtMatmulDesc_t, int, const void *, size_t);
    cublasStatus_t (*layout_create)(cublasLtMatrixLayout_t *, int, uint64_t, uint64_t, int64_t);
    cublasStatus_t (*layout_destroy)(cublasLtMatrixLayout_t);
    cublasStatus_t (*pref_create)(cublasLtMatmulPreference_t *);
    cublasStatus_t (*pref_destroy)(cublasLtMatmulPreference_t);
    cublasStatus_t (*pref_set)(cublasLtMatmulPreference_t, int, const void *, size_t);
    cublasStatus_t (*heuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t *, int *);
    cublasStatus_t (*matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *,
                             cublasLtMatrixLayout_t, const void *, cublasLtMatrixLayout_t, const void *,
                             const void *, cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,
                             const cublasLtMatmulAlgo_t *, void *, size_t, CUstream);
} lt;

int kl_cublaslt_load(const char *path, char **err) {
    void *lib;
    int r = open_once(path, lt.lib, &lib, err);
    if (r != 0) return r > 0 ? 0 : r;
#define REQ(field, name)                                          \
    do {                                                          \
        *(void **)(&lt.field) = dlsym(lib, name);                 \
        if (!lt.field) {                                          \
            *err = dup_err("the cuBLASLt library lacks ", name);  \
            memset(&lt, 0, sizeof lt);                            \
            dlclose(lib);                                         \
            return -1;                                            \
        }                                                         \
    } while (0)
    REQ(create, "cublasLtCreate");
    REQ(destroy, "cublasLtDestroy");
    REQ(desc_create, "cublasLtMatmulDescCreate");
    REQ(desc_destroy, "cublasLtMatmulDescDestroy");
    REQ(desc_set, "cublasLtMatmulDescSetAttribute");
    REQ(layout_create, "cublasLtMatrixLayoutCreate");
    REQ(layout_destroy, "cublasLtMatrixLayoutDestroy");
    REQ(pref_create, "cublasLtMatmulPreferenceCreate");
    REQ(pref_destroy, "cublasLtMatmulPreferenceDestroy");
    REQ(pref_set, "cublasLtMatmulPreferenceSetAttribute");
    REQ(heuristic, "cublasLtMatmulAlgoGetHeuristic");
    REQ(matmul, "cublasLtMatmul");
#undef REQ
    lt.lib = lib;
    return 0;
}

cublasStatus_t kl_cublaslt_create(CUcontext ctx, cublasLtHandle_t *h, const char **failed) {
    CB_SET_CTX(ctx);
    CB_CALL("cublasLtCreate", lt.create(h));
    return 0;
}

cublasStatus_t kl_cublaslt_destroy(CUcontext ctx, cublasLtHandle_t h, const char **failed) {
    CB_SET_CTX(ctx);
    CB_CALL("cublasLtDestroy", lt.destroy(h));
    return 0;
}

struct kl_lt_plan {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c; // C and D share a layout (the product is written in place)
    cublasLtMatmulAlgo_t algo;
    size_t workspace;
};

void kl_cublaslt_plan_free(kl_lt_plan *p) {
    if (!p) return;
    if (p->a) lt.layout_destroy(p->a);
    if (p->b) lt.layout_destroy(p->b);
    if (p->c) lt.layout_destroy(p->c);
    if (p->desc) lt.desc_destroy(p->desc);
    free(p);
}

size_t kl_cublaslt_plan_workspace(const kl_lt_plan *p) { return p->workspace; }

// LT_CALL is CB_CALL that also releases what the plan holds so far.
#define LT_CALL(name, call)                           \
    do {                                              \
        cublasStatus_t st_ = (call);                  \
        if (st_ != 0) {                               \
            *failed = name;                           \
            kl_cublaslt_plan_free(p);                 \
            if (pref) lt.pref_destroy(pref);          \
            return st_;                               \
        }                                             \
    } while (0)

cublasStatus_t kl_cublaslt_plan(CUcontext ctx, cublasLtHandle_t h, int transa, int transb, uint64_t m,
                                uint64_t n, uint64_t k, int64_t lda, int64_t ldb, int64_t ldc, int abtype,
                                int ctype, size_t max_workspace, kl_lt_plan **out, const char **failed) {
    CB_SET_CTX(ctx);
    *out = NULL;
    kl_lt_plan *p = calloc(1, sizeof *p);
    cublasLtMatmulPreference_t pref = NULL;
    if (!p) {
        *failed = "calloc";
        return 3; // CUBLAS_STATUS_ALLOC_FAILED
    }
    int32_t ta = transa, tb = transb;
    LT_CALL("cublasLtMatmulDescCreate", lt.desc_create(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_CALL("cublasLtMatmulDescSetAttribute", lt.desc_set(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT_CALL("cublasLtMatmulDescSetAttribute", lt.desc_set(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    // Column-major layouts: rows × cols of the stored matrix (op applied by the descriptor).
    LT_CALL("cublasLtMatrixLayoutCreate", lt.layout_create(&p->a, abtype, transa ? k : m, transa ? m : k, lda));
    LT_CALL("cublasLtMatrixLayoutCreate", lt.layout_create(&p->b, abtype, transb ? n : k, transb ? k : n, ldb));
    LT_CALL("cublasLtMatrixLayoutCreate", lt.layout_create(&p->c, ctype, m, n, ldc));
    uint64_t ws = max_workspace;
    LT_CALL("cublasLtMatmulPreferenceCreate", lt.pref_create(&pref));
    LT_CALL("cublasLtMatmulPreferenceSetAttribute",
            lt.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    memset(&res, 0, sizeof res);
    LT_CALL("cublasLtMatmulAlgoGetHeuristic",
            lt.heuristic(h, p->desc, p->a, p->b, p->c, p->c, pref, 1, &res, &found));
    LT_CALL("cublasLtMatmulAlgoGetHeuristic", found < 1 ? CUBLAS_STATUS_NOT_SUPPORTED : res.state);
    lt.pref_destroy(pref);
    p->algo = res.algo;
    p->workspace = res.workspaceSize;
    *out = p;
    return 0;
}
#undef LT_CALL

cublasStatus_t kl_cublaslt_matmul(CUcontext ctx, cublasLtHandle_t h, const kl_lt_plan *p, CUstream s,
                                  float alpha, CUdeviceptr a, CUdeviceptr b, float beta, CUdeviceptr c,
                                  CUdeviceptr workspace, const char **failed) {
    CB_SET_CTX(ctx);
    CB_CALL("cublasLtMatmul", lt.matmul(h, p->desc, &alpha, (const void *)a, p->a, (const void *)b, p->b, &beta,
                                        (const void *)c, p->c, (void *)c, p->c, &p->algo,
                                        p->workspace ? (void *)workspace : NULL, p->workspace, s));
    return 0;
}

// ---- NCCL ----
// Enum values from nccl.h (2.x): ncclSum = 0; ncclDataType_t ncclFloat32 = 7 etc. are passed
// through from Go (nccl.go). The library is opened with dlopen like cuBLAS; nothing here sets
// NCCL's environment (NCCL_NVLS_ENABLE & co. are left to the caller's environment).
#define KL_NCCL_SUM 0

static struct {
    void *lib;
    ncclResult_t (*comm_destroy)(ncclComm_t);                                      // ncclCommDestroy
    ncclResult_t (*group_start)(void);                                             // ncclGroupStart
    ncclResult_t (*group_end)(void);                                               // ncclGroupEnd
    ncclResult_t (*all_reduce)(const void *, void *, size_t, int, int, ncclComm_t, CUstream);
    ncclResult_t (*all_gather)(const void *, void *, size_t, int, ncclComm_t, CUstream);
    ncclResult_t (*reduce_scatter)(const void *, void *, size_t, int, int, ncclComm_t, CUstream);
    ncclResult_t (*reduce)(const void *, void *, size_t, int, int, int, ncclComm_t, CUstream); // ncclReduce
    const char *(*error_string)(ncclResult_t);                                     // ncclGetErrorString
    ncclResult_t (*get_version)(int *);                                            // ncclGetVersion
    // Communicators of processes (optional: every NCCL since 2.17 has them; see kl_nccl_has_ranks).
    ncclResult_t (*get_unique_id)(kl_nccl_id *);                                   // ncclGetUniqueId
    ncclResult_t (*comm_init_rank_config)(ncclComm_t *, int, kl_nccl_id, int, void *); // ncclCommInitRankConfig
    ncclResult_t (*comm_get_async_error)(ncclComm_t, ncclResult_t *);              // ncclCommGetAsyncError
    ncclResult_t (*comm_finalize)(ncclComm_t);                                     // ncclCommFinalize
    ncclResult_t (*comm_abort)(ncclComm_t);                                        // ncclCommAbort
    const char *(*get_last_error)(ncclComm_t);                                     // ncclGetLastError
    ncclResult_t (*send)(const void *, size_t, int, int, ncclComm_t, CUstream);    // ncclSend
    ncclResult_t (*recv)(void *, size_t, int, int, ncclComm_t, CUstream);          // ncclRecv
    // Symmetric memory and the device API (NCCL 2.27 / 2.28), optional.
    ncclResult_t (*mem_alloc)(void **, size_t);                                    // ncclMemAlloc
    ncclResult_t (*mem_free)(void *);                                              // ncclMemFree
    ncclResult_t (*window_register)(ncclComm_t, void *, size_t, void **, int);     // ncclCommWindowRegister
    ncclResult_t (*window_deregister)(ncclComm_t, void *);                         // ncclCommWindowDeregister
    ncclResult_t (*dev_comm_create)(ncclComm_t, const void *, void *);             // ncclDevCommCreate
    ncclResult_t (*dev_comm_destroy)(ncclComm_t, const void *);                    // ncclDevCommDestroy
} nc;

int kl_nccl_load(const char *path, char **err) {
    void *lib;
    int r = open_once(path, nc.lib, &lib, err);
    if (r != 0) return r > 0 ? 0 : r;
#define REQ(field, name)                                        \
    do {                                                        \
        *(void **)(&nc.field) = dlsym(lib, name);               \
        if (!nc.field) {                                        \
            *err = dup_err("the NCCL library lacks ", name);    \
            memset(&nc, 0, sizeof nc);                          \
            dlclose(lib);                                       \
            return -1;                                          \
        }                                                       \
    } while (0)
    REQ(comm_destroy, "ncclCommDestroy");
    REQ(group_start, "ncclGroupStart");
    REQ(group_end, "ncclGroupEnd");
    REQ(all_reduce, "ncclAllReduce");
    REQ(all_gather, "ncclAllGather");
    REQ(reduce_scatter, "ncclReduceScatter");
    REQ(reduce, "ncclReduce");
#undef REQ
    *(void **)(&nc.error_string) = dlsym(lib, "ncclGetErrorString");
    *(void **)(&nc.get_version) = dlsym(lib, "ncclGetVersion");
#define OPT(field, name) *(void **)(&nc.field) = dlsym(lib, name)
    OPT(get_unique_id, "ncclGetUniqueId");
    OPT(comm_init_rank_config, "ncclCommInitRankConfig");
    OPT(comm_get_async_error, "ncclCommGetAsyncError");
    OPT(comm_finalize, "ncclCommFinalize");
    OPT(comm_abort, "ncclCommAbort");
    OPT(get_last_error, "ncclGetLastError");
    OPT(send, "ncclSend");
    OPT(recv, "ncclRecv");
    OPT(mem_alloc, "ncclMemAlloc");
    OPT(mem_free, "ncclMemFree");
    OPT(window_register, "ncclCommWindowRegister");
    OPT(window_deregister, "ncclCommWindowDeregister");
    OPT(dev_comm_create, "ncclDevCommCreate");
    OPT(dev_comm_destroy, "ncclDevCommDestroy");
#undef OPT
    nc.lib = lib;
    return 0;
}

const char *kl_nccl_error_string(ncclResult_t r) { return nc.error_string ? nc.error_string(r) : NULL; }

int kl_nccl_version(int *v) { return nc.get_version ? nc.get_version(v) : KL_MISSING_SYMBOL; }

ncclResult_t kl_nccl_comm_destroy(ncclComm_t c) { return nc.comm_destroy(c); }

// ---- NCCL: communicators of processes, one rank each (nccl_ranks.go) ----
#define KL_NCCL_IN_PROGRESS 7 // ncclInProgress

const char *kl_nccl_missing_rank_symbol(void) {
    if (!nc.get_unique_id) return "ncclGetUniqueId";
    if (!nc.comm_init_rank_config) return "ncclCommInitRankConfig";
    if (!nc.comm_get_async_error) return "ncclCommGetAsyncError";
    if (!nc.comm_finalize) return "ncclCommFinalize";
    if (!nc.comm_abort) return "ncclCommAbort";
    if (!nc.send) return "ncclSend";
    if (!nc.recv) return "ncclRecv";
    return NULL;
}

const char *kl_nccl_missing_symmetric_symbol(void) {
    if (!nc.mem_alloc) return "ncclMemAlloc";
    if (!nc.mem_free) return "ncclMemFree";
    if (!nc.window_register) return "ncclCommWindowRegister";
    if (!nc.window_deregister) return "ncclCommWindowDeregister";
    if (!nc.dev_comm_create) return "ncclDevCommCreate";
    if (!nc.dev_comm_destroy) return "ncclDevCommDestroy";
    return NULL;
}

ncclResult_t kl_nccl_get_unique_id(kl_nccl_id *id) { return nc.get_unique_id(id); }

// ncclConfig_t as NCCL 2.17 laid it out: NCCL accepts the config of an older version (it reads
// `size` bytes and takes the defaults of the fields that version lacked), so this layout stays
// valid for every later NCCL.
typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cga_cluster_size, min_ctas, max_ctas;
    const char *net_name;
    int split_share;
} kl_nccl_config_v21700;
#define KL_NCCL_CONFIG_UNDEF_INT (-2147483647 - 1) // NCCL_CONFIG_UNDEF_INT is INT_MIN

ncclResult_t kl_nccl_comm_init_rank(CUcontext ctx, ncclComm_t *comm, int nranks, const kl_nccl_id *id, int rank) {
    // NCCL takes the calling thread's current device as the rank's.
    CUresult cr = cu.cuCtxSetCurrent(ctx);
    if (cr != 0) return 1; // ncclUnhandledCudaError
    kl_nccl_config_v21700 cfg = {sizeof cfg, 0xcafebeef, 21700, 0 /* non-blocking */, KL_NCCL_CONFIG_UNDEF_INT,
                                 KL_NCCL_CONFIG_UNDEF_INT, KL_NCCL_CONFIG_UNDEF_INT, NULL, KL_NCCL_CONFIG_UNDEF_INT};
    return nc.comm_init_rank_config(comm, nranks, *id, rank, &cfg);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// kl_nccl_wait polls a non-blocking communicator until its pending operation (initialisation,
// an enqueued collective) is done, for at most timeout_ms: ncclSuccess, the error NCCL reports,
// or KL_NCCL_TIMEOUT.
ncclResult_t kl_nccl_wait(ncclComm_t comm, ncclResult_t r, double timeout_ms) {
    if (r == 0) {
        // Done at once; an earlier operation may still have failed (a peer lost, say).
        ncclResult_t st = 0;
        if (nc.comm_get_async_error(comm, &st) == 0 && st != 0 && st != KL_NCCL_IN_PROGRESS) return st;
        return 0;
    }
    if (r != KL_NCCL_IN_PROGRESS) return r;
    double deadline = now_ms() + timeout_ms;
    for (long spins = 0;; spins++) {
        ncclResult_t st = 0;
        ncclResult_t q = nc.comm_get_async_error(comm, &st);
        if (q != 0) return q;
        if (st != KL_NCCL_IN_PROGRESS) return st;
        if (now_ms() > deadline) return KL_NCCL_TIMEOUT;
        if (spins > 1000) {
            struct timespec pause = {0, 100000}; // 0.1 ms once the quick answers are over
            nanosleep(&pause, NULL);
        } else {
            sched_yield();
        }
    }
}

ncclResult_t kl_nccl_async_error(ncclComm_t comm, ncclResult_t *st) { return nc.comm_get_async_error(comm, st); }
ncclResult_t kl_nccl_comm_finalize(ncclComm_t comm) { return nc.comm_finalize(comm); }
ncclResult_t kl_nccl_comm_abort(ncclComm_t comm) { return nc.comm_abort(comm); }
const char *kl_nccl_last_error(ncclComm_t comm) { return nc.get_last_error ? nc.get_last_error(comm) : NULL; }

ncclResult_t kl_nccl_rank_collective(CUcontext ctx, int op, CUdeviceptr send, CUdeviceptr recv, size_t count,
                                     int dtype, ncclComm_t comm, CUstream s) {
    CUresult cr = cu.cuCtxSetCurrent(ctx);
    if (cr != 0) return 1;
    const void *sb = (const void *)(uintptr_t)send;
    void *rb = (void *)(uintptr_t)recv;
    switch (op) {
    case 0: return nc.all_reduce(sb, rb, count, dtype, KL_NCCL_SUM, comm, s);
    case 1: return nc.all_gather(sb, rb, count, dtype, comm, s);
    default: return nc.reduce_scatter(sb, rb, count, dtype, KL_NCCL_SUM, comm, s);
    }
}

// group_open makes ctx current and opens an NCCL group; group_close closes it, returning the
// first failure of the calls queued in it (first) before the group's own.
static ncclResult_t group_open(CUcontext ctx, const char **failed) {
    if (cu.cuCtxSetCurrent(ctx) != 0) {
        *failed = "cuCtxSetCurrent";
        return 1;
    }
    ncclResult_t r = nc.group_start();
    if (r != 0) *failed = "ncclGroupStart";
    return r;
}

static ncclResult_t group_close(ncclResult_t first, const char **failed) {
    ncclResult_t r = nc.group_end();
    if (first != 0) return first;
    if (r != 0 && r != KL_NCCL_IN_PROGRESS) *failed = "ncclGroupEnd";
    return r;
}

ncclResult_t kl_nccl_all_to_allv(CUcontext ctx, int n, CUdeviceptr send, const size_t *send_counts,
                                 const size_t *send_offsets, CUdeviceptr recv, const size_t *recv_counts,
                                 const size_t *recv_offsets, size_t elem_bytes, int dtype, ncclComm_t comm,
                                 CUstream s, const char **failed) {
    ncclResult_t r = group_open(ctx, failed);
    if (r != 0) return r;
    ncclResult_t first = 0;
    for (int j = 0; j < n && first == 0; j++) {
        if (send_counts[j] > 0) {
            first = nc.send((const void *)(uintptr_t)(send + send_offsets[j] * elem_bytes), send_counts[j], dtype, j,
                            comm, s);
            if (first) *failed = "ncclSend";
        }
        if (first == 0 && recv_counts[j] > 0) {
            first = nc.recv((void *)(uintptr_t)(recv + recv_offsets[j] * elem_bytes), recv_counts[j], dtype, j, comm,
                            s);
            if (first) *failed = "ncclRecv";
        }
    }
    return group_close(first, failed);
}

ncclResult_t kl_nccl_reduce_scatter_v(CUcontext ctx, int n, CUdeviceptr send, const size_t *counts, CUdeviceptr recv,
                                      size_t elem_bytes, int dtype, ncclComm_t comm, CUstream s,
                                      const char **failed) {
    ncclResult_t r = group_open(ctx, failed);
    if (r != 0) return r;
    ncclResult_t first = 0;
    size_t offset = 0;
    for (int j = 0; j < n && first == 0; offset += counts[j], j++) {
        if (counts[j] == 0) continue; // the same on every rank: all of them skip it
        // recv is read only on the root (rank j): every rank passes its own.
        first = nc.reduce((const void *)(uintptr_t)(send + offset * elem_bytes), (void *)(uintptr_t)recv, counts[j],
                          dtype, KL_NCCL_SUM, j, comm, s);
        if (first) *failed = "ncclReduce";
    }
    return group_close(first, failed);
}

// ---- NCCL: symmetric memory and the device API (nccl_symmetric.go) ----
// ncclDevCommRequirements as NCCL 2.28.0-2.28.6 (layout 1) and 2.28.7-2.28.x (layout 2) define it,
// zero-initialised as nccl_device.h's examples do (2.28 has no initializer macro).
struct kl_dev_reqs_v1 {
    void *resource_requirements, *team_requirements;
    bool lsa_multimem;
    int lsa_barrier_count;
};
struct kl_dev_reqs_v2 {
    void *resource_requirements, *team_requirements;
    bool lsa_multimem;
    int barrier_count, lsa_barrier_count, rail_gin_barrier_count;
    int lsa_lla2a_block_count, lsa_lla2a_slot_count;
    bool gin_force_enable;
    int gin_context_count, gin_signal_count, gin_counter_count;
};

ncclResult_t kl_nccl_mem_alloc(CUcontext ctx, void **p, size_t bytes) {
    if (cu.cuCtxSetCurrent(ctx) != 0) return 1;
    return nc.mem_alloc(p, bytes);
}

ncclResult_t kl_nccl_mem_free(CUcontext ctx, void *p) {
    if (cu.cuCtxSetCurrent(ctx) != 0) return 1;
    return nc.mem_free(p);
}

ncclResult_t kl_nccl_window_register(CUcontext ctx, ncclComm_t c, void *p, size_t bytes, void **win) {
    if (cu.cuCtxSetCurrent(ctx) != 0) return 1;
    return nc.window_register(c, p, bytes, win, 0x01 /* NCCL_WIN_COLL_SYMMETRIC */);
}

ncclResult_t kl_nccl_window_deregister(CUcontext ctx, ncclComm_t c, void *win) {
    if (cu.cuCtxSetCurrent(ctx) != 0) return 1;
    return nc.window_deregister(c, win);
}

ncclResult_t kl_nccl_dev_comm_create(CUcontext ctx, ncclComm_t c, int layout, int lsa_barriers, void *out) {
    if (cu.cuCtxSetCurrent(ctx) != 0) return 1;
    memset(out, 0, KL_NCCL_DEV_COMM_BYTES);
    if (layout == 1) {
        struct kl_dev_reqs_v1 r;
        memset(&r, 0, sizeof r);
        r.lsa_barrier_count = lsa_barriers;
        return nc.dev_comm_create(c, &r, out);
    }
    struct kl_dev_reqs_v2 r;
    memset(&r, 0, sizeof r);
    r.lsa_barrier_count = lsa_barriers;
    return nc.dev_comm_create(c, &r, out);
}

ncclResult_t kl_nccl_dev_comm_destroy(CUcontext ctx, ncclComm_t c, const void *dev_comm) {
    if (cu.cuCtxSetCurrent(ctx) != 0) return 1;
    return nc.dev_comm_destroy(c, dev_comm);
}
