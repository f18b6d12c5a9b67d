// shim.h: the small part of the CUDA driver API and of cuBLAS that this package uses, declared
// here so that the package builds without the CUDA toolkit (no cuda.h on the build machine).
// Both libraries are opened at run time with dlopen; see shim.c.
//
// Types and enum values are copied from CUDA 12.x / 13.0's cuda.h, cublas_api.h and
// library_types.h. They are part of NVIDIA's stable ABI and never change between releases.

#ifndef KL_CUDA_SHIM_H
#define KL_CUDA_SHIM_H

#include <stddef.h>
#include <stdint.h>

// ---- driver API types (cuda.h) ----
typedef int CUresult;                 // enum cudaError_enum
typedef int CUdevice;                 // typedef int CUdevice_v1
typedef void *CUcontext;              // struct CUctx_st *
typedef void *CUmodule;               // struct CUmod_st *
typedef void *CUfunction;             // struct CUfunc_st *
typedef void *CUstream;               // struct CUstream_st *
typedef void *CUevent;                // struct CUevent_st *
typedef unsigned long long CUdeviceptr; // CUdeviceptr_v2 on LP64
typedef struct { char bytes[16]; } CUuuid;
typedef void *CUgraph;                // struct CUgraph_st *
typedef void *CUgraphExec;            // struct CUgraphExec_st *

// CUmemAllocationProp (cuda.h), with its enums as ints and CUmemLocation unfolded.
typedef struct {
    int type;                    // CUmemAllocationType
    int requested_handle_types;  // CUmemAllocationHandleType
    int location_type;           // CUmemLocation.type (CUmemLocationType)
    int location_id;             // CUmemLocation.id
    void *win32_handle_meta_data;
    unsigned char compression_type, gpu_direct_rdma_capable;
    unsigned short usage;
    unsigned char reserved[4];
} kl_mem_prop;

// CUmemAccessDesc (cuda.h).
typedef struct {
    int location_type; // CUmemLocation.type
    int location_id;   // CUmemLocation.id
    int flags;         // CUmemAccess_flags
} kl_mem_access;

// CUmemAllocationHandleType: CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR.
#define KL_MEM_HANDLE_TYPE_POSIX_FD 0x1

// KL_MISSING_SYMBOL is returned by a wrapper whose driver function this libcuda does not export
// (an older driver). It is not a CUDA code: CUDA's are all >= 0.
#define KL_MISSING_SYMBOL (-1)

// ---- loading ----
// kl_cuda_load opens the driver library at path and resolves its symbols, once per process. It
// returns 0; -1 when the library cannot be opened or lacks a required symbol; -2 when another
// driver library is already loaded. On failure *err is a malloc'd message (free: kl_free_err).
int kl_cuda_load(const char *path, char **err);
void kl_free_err(char *err);
int kl_has_func_param_info(void);

// ---- context-free calls ----
CUresult kl_init(void);
CUresult kl_driver_version(int *v);
CUresult kl_device_count(int *n);
CUresult kl_device_get(CUdevice *d, int ordinal);
CUresult kl_device_name(char *name, int len, CUdevice d);
CUresult kl_device_uuid(CUuuid *uuid, CUdevice d);
CUresult kl_device_pci_bus_id(char *id, int len, CUdevice d);
CUresult kl_device_attribute(int *v, int attr, CUdevice d);
CUresult kl_device_total_mem(size_t *bytes, CUdevice d);
CUresult kl_device_can_access_peer(int *can, CUdevice d, CUdevice peer);
CUresult kl_primary_ctx_retain(CUcontext *ctx, CUdevice d);
CUresult kl_primary_ctx_release(CUdevice d);
const char *kl_error_name(CUresult r);
const char *kl_error_string(CUresult r);

// ---- calls made with a context current ----
// Each wrapper makes ctx current on the calling OS thread and makes the call, both inside the
// same C call, so that the Go scheduler cannot move the goroutine between the two.
CUresult kl_ctx_synchronize(CUcontext ctx);
CUresult kl_ctx_enable_peer_access(CUcontext ctx, CUcontext peer);
CUresult kl_mem_get_info(CUcontext ctx, size_t *free_bytes, size_t *total);
CUresult kl_mem_alloc(CUcontext ctx, CUdeviceptr *p, size_t bytes);
CUresult kl_mem_free(CUcontext ctx, CUdeviceptr p);
CUresult kl_mem_alloc_host(CUcontext ctx, void **p, size_t bytes);
CUresult kl_mem_free_host(CUcontext ctx, void *p);
CUresult kl_memcpy_htod(CUcontext ctx, CUdeviceptr dst, const void *src, size_t bytes, CUstream s, int async);
CUresult kl_memcpy_dtoh(CUcontext ctx, void *dst, CUdeviceptr src, size_t bytes, CUstream s, int async);
CUresult kl_memcpy_dtod(CUcontext ctx, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s);
CUresult kl_memcpy_peer(CUcontext ctx, CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                        CUcontext src_ctx, size_t bytes, CUstream s);
CUresult kl_memset_d8(CUcontext ctx, CUdeviceptr dst, unsigned char v, size_t n, CUstream s);
CUresult kl_memset_d32(CUcontext ctx, CUdeviceptr dst, unsigned int v, size_t n, CUstream s);
CUresult kl_module_load(CUcontext ctx, CUmodule *m, const char *path);
CUresult kl_module_unload(CUcontext ctx, CUmodule m);
CUresult kl_module_get_function(CUcontext ctx, CUfunction *f, CUmodule m, const char *name);
// kl_tensor_map_encode_tiled fills the 128-byte CUtensorMap at map (64-byte aligned). dtype is a
// CUtensorMapDataType (FLOAT16 6, FLOAT32 7, FLOAT64 8, BFLOAT16 9), swizzle a CUtensorMapSwizzle
// (NONE 0, 32B 1, 64B 2, 128B 3), l2promo a CUtensorMapL2promotion (NONE 0, 64B 1, 128B 2,
// 256B 3), oobfill a CUtensorMapFloatOOBfill (NONE 0, NAN_REQUEST_ZERO_FMA 1); values from cuda.h.
CUresult kl_tensor_map_encode_tiled(CUcontext ctx, void *map, int dtype, unsigned rank, CUdeviceptr global,
                                    const unsigned long long *dims, const unsigned long long *strides,
                                    const unsigned *box, const unsigned *elem_strides, int swizzle,
                                    int l2promo, int oobfill);
CUresult kl_func_param_info(CUcontext ctx, CUfunction f, size_t index, size_t *offset, size_t *size);
CUresult kl_occupancy_blocks_per_sm(CUcontext ctx, int *n, CUfunction f, int block, size_t dyn_smem);
CUresult kl_func_get_attribute(CUcontext ctx, int *v, int attr, CUfunction f);
CUresult kl_func_set_attribute(CUcontext ctx, CUfunction f, int attr, int v);
CUresult kl_launch(CUcontext ctx, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                   unsigned bx, unsigned by, unsigned bz, unsigned shared, CUstream s, void **params);
CUresult kl_stream_create(CUcontext ctx, CUstream *s);
CUresult kl_stream_destroy(CUcontext ctx, CUstream s);
CUresult kl_stream_synchronize(CUcontext ctx, CUstream s);
CUresult kl_stream_create_nonblocking(CUcontext ctx, CUstream *s);
CUresult kl_stream_wait_value(CUcontext ctx, CUstream s, CUdeviceptr word, unsigned int v);
CUresult kl_stream_write_value(CUcontext ctx, CUstream s, CUdeviceptr word, unsigned int v);
CUresult kl_stream_wait_event(CUcontext ctx, CUstream s, CUevent e); // cuStreamWaitEvent, flags 0
CUresult kl_event_create(CUcontext ctx, CUevent *e);
CUresult kl_event_destroy(CUcontext ctx, CUevent e);
CUresult kl_event_record(CUcontext ctx, CUevent e, CUstream s);
CUresult kl_event_synchronize(CUcontext ctx, CUevent e);
CUresult kl_event_elapsed(CUcontext ctx, float *ms, CUevent start, CUevent end);

// Virtual memory management (memory.go's shared buffers). Each returns KL_MISSING_SYMBOL when the
// driver lacks the VMM API; the wrappers that make several calls name the one that failed in *failed.
// kl_vmm_granularity is cuMemGetAllocationGranularity (minimum) for a device allocation of dev.
CUresult kl_vmm_granularity(CUdevice dev, int handle_type, size_t *g);
// kl_vmm_alloc creates size bytes on dev (cuMemCreate), reserves and maps an address range for
// them and gives dev read-write access; size and align are multiples of the granularity.
CUresult kl_vmm_alloc(CUcontext ctx, CUdevice dev, int handle_type, size_t size, size_t align, CUdeviceptr *p,
                      unsigned long long *handle, const char **failed);
CUresult kl_vmm_export_fd(CUcontext ctx, unsigned long long handle, int handle_type, int *fd);
// kl_vmm_import_fd imports fd (cuMemImportFromShareableHandle) and maps it as kl_vmm_alloc does.
CUresult kl_vmm_import_fd(CUcontext ctx, CUdevice dev, int fd, int handle_type, size_t size, size_t align,
                          CUdeviceptr *p, unsigned long long *handle, const char **failed);
// kl_vmm_free unmaps, frees the address range and releases the handle (all three, even after a failure).
CUresult kl_vmm_free(CUcontext ctx, CUdeviceptr p, size_t size, unsigned long long handle, const char **failed);

// Stream capture and graphs; kl_stream_begin_capture returns KL_MISSING_SYMBOL without them.
CUresult kl_stream_begin_capture(CUcontext ctx, CUstream s); // relaxed mode
CUresult kl_stream_end_capture(CUcontext ctx, CUstream s, CUgraph *g);
CUresult kl_graph_instantiate(CUcontext ctx, CUgraphExec *e, CUgraph g);
CUresult kl_graph_launch(CUcontext ctx, CUgraphExec e, CUstream s);
CUresult kl_graph_destroy(CUcontext ctx, CUgraphExec e, CUgraph g); // either may be NULL

// ---- cuBLAS (cublas_api.h) ----
typedef int cublasStatus_t;
typedef void *cublasHandle_t;

int kl_cublas_load(const char *path, char **err); // as kl_cuda_load
const char *kl_cublas_status_name(cublasStatus_t s);   // NULL when the library lacks the call
const char *kl_cublas_status_string(cublasStatus_t s); // NULL when the library lacks the call
// The cuBLAS wrappers set *failed to the name of the call that failed (for the error message).
cublasStatus_t kl_cublas_create(CUcontext ctx, cublasHandle_t *h, const char **failed);
cublasStatus_t kl_cublas_destroy(CUcontext ctx, cublasHandle_t h, const char **failed);
cublasStatus_t kl_cublas_sgemm(CUcontext ctx, cublasHandle_t h, CUstream s, int transa, int transb,
                               int m, int n, int k, float alpha, CUdeviceptr a, int lda,
                               CUdeviceptr b, int ldb, float beta, CUdeviceptr c, int ldc,
                               const char **failed);
cublasStatus_t kl_cublas_gemm_ex(CUcontext ctx, cublasHandle_t h, CUstream s, int transa, int transb,
                                 int m, int n, int k, float alpha, CUdeviceptr a, int atype, int lda,
                                 CUdeviceptr b, int btype, int ldb, float beta, CUdeviceptr c,
                                 int ctype, int ldc, const char **failed);
// kl_cublas_gemm_grouped_batched wraps cublasGemmGroupedBatchedEx (cuBLAS 12.5+; returns
// KL_MISSING_SYMBOL when the library lacks it). The per-group arrays are host arrays of
// group_count entries; a, b, c are device arrays of device pointers, one per problem.
cublasStatus_t kl_cublas_gemm_grouped_batched(CUcontext ctx, cublasHandle_t h, CUstream s,
                                              const int *transa, const int *transb, const int *m,
                                              const int *n, const int *k, const float *alpha,
                                              CUdeviceptr a, int atype, const int *lda, CUdeviceptr b,
                                              int btype, const int *ldb, const float *beta,
                                              CUdeviceptr c, int ctype, const int *ldc,
                                              int group_count, const int *group_size,
                                              const char **failed);


// ---- cuBLASLt (cublasLt.h) ----
// A plan is one matmul shape with its descriptors and the algorithm the heuristic ranked first,
// made once and reused for every call of that shape (kl_cublaslt_plan_free releases it).
typedef void *cublasLtHandle_t;
typedef struct kl_lt_plan kl_lt_plan;

int kl_cublaslt_load(const char *path, char **err); // as kl_cuda_load
cublasStatus_t kl_cublaslt_create(CUcontext ctx, cublasLtHandle_t *h, const char **failed);
cublasStatus_t kl_cublaslt_destroy(CUcontext ctx, cublasLtHandle_t h, const char **failed);
// kl_cublaslt_plan describes D = alpha·op(A)·op(B) + beta·C (C and D the same matrix, column-major)
// with FP32 accumulation and asks cublasLtMatmulAlgoGetHeuristic for the best algorithm that needs
// at most max_workspace bytes. No algorithm is CUBLAS_STATUS_NOT_SUPPORTED.
cublasStatus_t kl_cublaslt_plan(CUcontext ctx, cublasLtHandle_t h, int transa, int transb, uint64_t m,
                                uint64_t n, uint64_t k, int64_t lda, int64_t ldb, int64_t ldc, int abtype,
                                int ctype, size_t max_workspace, kl_lt_plan **out, const char **failed);
void kl_cublaslt_plan_free(kl_lt_plan *p);
size_t kl_cublaslt_plan_workspace(const kl_lt_plan *p); // the bytes of workspace the algorithm uses
cublasStatus_t kl_cublaslt_matmul(CUcontext ctx, cublasLtHandle_t h, const kl_lt_plan *p, CUstream s,
                                  float alpha, CUdeviceptr a, CUdeviceptr b, float beta, CUdeviceptr c,
                                  CUdeviceptr workspace, const char **failed);

// ---- NCCL (nccl.h): the library; see nccl.go ----
typedef int ncclResult_t;
typedef void *ncclComm_t;

int kl_nccl_load(const char *path, char **err); // as kl_cuda_load
const char *kl_nccl_error_string(ncclResult_t r); // NULL when the library lacks the call
int kl_nccl_version(int *v);
ncclResult_t kl_nccl_comm_destroy(ncclComm_t c);
// ---- NCCL: communicators of processes, one rank each; see nccl_ranks.go ----
typedef struct { char internal[128]; } kl_nccl_id; // ncclUniqueId (NCCL_UNIQUE_ID_BYTES)
#define KL_NCCL_TIMEOUT (-2) // not an ncclResult_t: kl_nccl_wait ran out of time

// The first call of each family this NCCL lacks, or NULL when it has them all.
const char *kl_nccl_missing_rank_symbol(void);
const char *kl_nccl_missing_symmetric_symbol(void);
ncclResult_t kl_nccl_get_unique_id(kl_nccl_id *id);
// kl_nccl_comm_init_rank starts ncclCommInitRankConfig, non-blocking, on ctx's device: it returns
// ncclInProgress while the ranks meet (poll with kl_nccl_wait).
ncclResult_t kl_nccl_comm_init_rank(CUcontext ctx, ncclComm_t *comm, int nranks, const kl_nccl_id *id, int rank);
ncclResult_t kl_nccl_wait(ncclComm_t comm, ncclResult_t r, double timeout_ms);
ncclResult_t kl_nccl_async_error(ncclComm_t comm, ncclResult_t *st);
ncclResult_t kl_nccl_comm_finalize(ncclComm_t comm);
ncclResult_t kl_nccl_comm_abort(ncclComm_t comm);
const char *kl_nccl_last_error(ncclComm_t comm); // NULL when the library lacks ncclGetLastError
// op 0 AllReduce (sum), 1 AllGather, 2 ReduceScatter (sum); count as NCCL counts it for the op.
ncclResult_t kl_nccl_rank_collective(CUcontext ctx, int op, CUdeviceptr send, CUdeviceptr recv, size_t count,
                                     int dtype, ncclComm_t comm, CUstream s);
// kl_nccl_reduce_scatter_v: one ncclReduce per shard (counts[j] elements, packed) to rank j, grouped.
ncclResult_t kl_nccl_reduce_scatter_v(CUcontext ctx, int n, CUdeviceptr send, const size_t *counts, CUdeviceptr recv,
                                      size_t elem_bytes, int dtype, ncclComm_t comm, CUstream s,
                                      const char **failed);
// kl_nccl_all_to_allv: grouped ncclSend/ncclRecv with every rank; counts and offsets in elements.
ncclResult_t kl_nccl_all_to_allv(CUcontext ctx, int n, CUdeviceptr send, const size_t *send_counts,
                                 const size_t *send_offsets, CUdeviceptr recv, const size_t *recv_counts,
                                 const size_t *recv_offsets, size_t elem_bytes, int dtype, ncclComm_t comm,
                                 CUstream s, const char **failed);

// ---- NCCL: symmetric memory and the device API; see nccl_symmetric.go ----
// KL_NCCL_DEV_COMM_BYTES bounds sizeof(ncclDevComm) (about 90 bytes in NCCL 2.28.3).
#define KL_NCCL_DEV_COMM_BYTES 4096
ncclResult_t kl_nccl_mem_alloc(CUcontext ctx, void **p, size_t bytes);
ncclResult_t kl_nccl_mem_free(CUcontext ctx, void *p);
ncclResult_t kl_nccl_window_register(CUcontext ctx, ncclComm_t c, void *p, size_t bytes, void **win); // symmetric
ncclResult_t kl_nccl_window_deregister(CUcontext ctx, ncclComm_t c, void *win);
// kl_nccl_dev_comm_create fills out (KL_NCCL_DEV_COMM_BYTES) with an ncclDevComm; layout picks the
// ncclDevCommRequirements of NCCL 2.28.0-2.28.6 (1) or 2.28.7 on (2).
ncclResult_t kl_nccl_dev_comm_create(CUcontext ctx, ncclComm_t c, int layout, int lsa_barriers, void *out);
ncclResult_t kl_nccl_dev_comm_destroy(CUcontext ctx, ncclComm_t c, const void *dev_comm);

#endif
