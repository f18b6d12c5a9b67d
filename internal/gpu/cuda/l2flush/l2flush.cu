// l2flush.cu — the source of l2flush.ptx, the cuda backend's L2 flush (timing.go). Built without
// the CUDA toolkit, by clang's NVPTX back end, so that the backend needs no compiler at run time:
//
//   clang++ -x cuda --cuda-device-only -S -nocudainc -nocudalib --cuda-gpu-arch=sm_70 -O3 \
//       -std=c++17 -Wno-unknown-cuda-version l2flush.cu -o l2flush.ptx
//
// The driver compiles the PTX (ISA 6.0, sm_70) for the GPU it runs on when the module is loaded.
//
// kl_l2_read reads n 16-byte words of buf with a grid-stride loop, four loads in flight a thread.
// Reading leaves L2 holding clean lines of buf only: what a timed run writes back afterwards is
// what it wrote itself. The XOR of the words is stored to *sink only if it equals key, which no
// reader of the result relies on; it keeps the compiler from dropping the loads.
typedef unsigned long long u64;
struct __attribute__((aligned(16))) word4 {
    unsigned x, y, z, w;
};

static __attribute__((device)) unsigned fold(word4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

extern "C" __attribute__((global)) void kl_l2_read(const word4* buf, u64 n, unsigned* sink, unsigned key) {
    const u64 stride = (u64)__nvvm_read_ptx_sreg_nctaid_x() * __nvvm_read_ptx_sreg_ntid_x();
    u64 i = (u64)__nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() + __nvvm_read_ptx_sreg_tid_x();
    unsigned acc = 0;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const word4 a = buf[i], b = buf[i + stride], c = buf[i + 2 * stride], d = buf[i + 3 * stride];
        acc ^= fold(a) ^ fold(b) ^ fold(c) ^ fold(d);
    }
    for (; i < n; i += stride) acc ^= fold(buf[i]);
    if (acc == key) *sink = acc;
}
