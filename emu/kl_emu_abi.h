/* kl_emu_abi.h — the C interface between the three parts of the CPU emulator:
 *
 *   - the runtime (kl_emu_rt.cc, built once into libklemu-<hash>.so),
 *   - a kernel module (a lab's .cu file plus a generated registry, built into <name>-<hash>.so,
 *     linked against the runtime),
 *   - the Go backend (internal/gpu/emu), which dlopens a kernel module, reads its registry and
 *     calls kl_emu_launch.
 *
 * Plain C so that cgo can read it. Bump KL_EMU_ABI_VERSION on any change of layout or meaning.
 */
#ifndef KL_EMU_ABI_H
#define KL_EMU_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KL_EMU_ABI_VERSION 3

/* The limits of the emulated device, the same as a recent NVIDIA GPU's. */
#define KL_EMU_MAX_THREADS_PER_BLOCK 1024
#define KL_EMU_MAX_BLOCK_X 1024
#define KL_EMU_MAX_BLOCK_Y 1024
#define KL_EMU_MAX_BLOCK_Z 64
#define KL_EMU_MAX_GRID_X 2147483647u
#define KL_EMU_MAX_GRID_Y 65535u
#define KL_EMU_MAX_GRID_Z 65535u
#define KL_EMU_DEFAULT_DYN_SHARED (48 * 1024) /* without cuFuncSetAttribute */
#define KL_EMU_MAX_DYN_SHARED (227 * 1024)    /* with the opt-in, as on Hopper */

/* A kernel entry point as the generated registry describes it. */
typedef void (*kl_emu_tramp)(void **args);

typedef struct kl_emu_entry {
    const char *name;          /* the extern "C" name */
    kl_emu_tramp tramp;        /* calls the kernel with *(P_i *)args[i] */
    int nparams;               /* from the function's type: exact */
    const size_t *sizes;       /* nparams sizeof values */
    const char *const *types;  /* ntypes C types as written in the source (for messages) */
    int ntypes;                /* equals nparams unless the source scanner was confused */
    int max_threads;           /* __launch_bounds__ maximum threads per block, 0 when none */
    int warp_size;             /* lanes of a warp the kernel was compiled for: KL_EMU_WARP_SIZE */
} kl_emu_entry;

/* Status codes of kl_emu_launch. */
enum {
    KL_EMU_OK = 0,
    KL_EMU_ERR_INVALID = 1,    /* bad launch parameters */
    KL_EMU_ERR_DIVERGENCE = 2, /* barrier divergence: threads exited while others wait */
    KL_EMU_ERR_DEADLOCK = 3,   /* every thread of a block waits and none can go on */
    KL_EMU_ERR_TIMEOUT = 4,    /* the kernel ran past its time limit */
    KL_EMU_ERR_FAULT = 5,      /* illegal memory access (SIGSEGV/SIGBUS in kernel code) */
    KL_EMU_ERR_ARITH = 6,      /* arithmetic trap (integer division by zero) */
    KL_EMU_ERR_TRAP = 7,       /* assert() failed or __trap() */
    KL_EMU_ERR_MISUSE = 8,     /* an API used against its rules (mask, ldm, width...) */
    KL_EMU_ERR_STACK = 9,      /* a thread overflowed its stack */
    KL_EMU_ERR_INTERNAL = 10,
    KL_EMU_ERR_MISALIGNED = 11 /* a general-protection fault: a vector access off its alignment */
};

#define KL_EMU_MESSAGE_LEN 2048

typedef struct kl_emu_launch_params {
    /* inputs */
    const kl_emu_entry *entry;
    void **args;            /* entry->nparams pointers to the argument bytes (copied) */
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t shared_bytes;  /* dynamic shared memory */
    uint32_t workers;       /* blocks that run at once: the device's SMs */
    uint64_t timeout_ms;    /* 0: no limit */
    /* outputs */
    char *output;           /* printf output (malloc'd, free with kl_emu_free), may be NULL */
    size_t output_len;
    int output_truncated;
    uint64_t fault_addr;    /* KL_EMU_ERR_FAULT: the address */
    int fault_write;        /* KL_EMU_ERR_FAULT: 1 write, 0 read, -1 unknown */
    int sticky;             /* 1: the process may be in a bad state (a worker was lost) */
    char message[KL_EMU_MESSAGE_LEN];
} kl_emu_launch_params;

/* Exported by the runtime. */
int kl_emu_abi_version(void);
int kl_emu_launch(kl_emu_launch_params *p);
void kl_emu_free(void *p);

/* Exported by every kernel module (the generated registry). */
/* extern const kl_emu_entry kl_emu_entries[]; extern const int kl_emu_num_entries; */
/* extern const int kl_emu_module_abi; */

#ifdef __cplusplus
}
#endif

#endif /* KL_EMU_ABI_H */
