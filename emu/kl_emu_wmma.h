// kl_emu_wmma.h — nvcuda::wmma for the CPU emulator (included by kl_emu.h).
//
// A fragment is spread over the 32 lanes of a warp as on a GPU, but with a simple mapping: lane l
// holds elements [l*E, (l+1)*E) of the tile in row-major order, E = num_elements = rows*cols/32.
// Code that treats x[] elementwise (scaling, conversion, fill) works unchanged; code that assumes
// NVIDIA's undocumented lane mapping does not (it is not portable on GPUs either).
//
// load_matrix_sync and store_matrix_sync move each lane's own elements; mma_sync gathers the
// warp's fragments when all 32 lanes have arrived and computes D = A·B + C in FP32 (INT32 for
// 8-bit inputs). Shapes: m16n16k16, m32n8k16, m8n32k16 (half, bf16, 8-bit integers) and
// m16n16k8 (tf32).
#pragma once

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

namespace precision {
struct tf32 {};
} // namespace precision
namespace experimental {
namespace precision {
struct u4 {};
struct s4 {};
struct b1 {};
} // namespace precision
} // namespace experimental

namespace detail {
template <typename Use, int M, int N, int K> struct shape;
template <int M, int N, int K> struct shape<matrix_a, M, N, K> { static constexpr int rows = M, cols = K; };
template <int M, int N, int K> struct shape<matrix_b, M, N, K> { static constexpr int rows = K, cols = N; };
template <int M, int N, int K> struct shape<accumulator, M, N, K> { static constexpr int rows = M, cols = N; };

template <typename T> struct storage { using type = T; };
template <> struct storage<precision::tf32> { using type = float; };

template <int M, int N, int K> struct valid_shape : std::false_type {};
template <> struct valid_shape<16, 16, 16> : std::true_type {};
template <> struct valid_shape<32, 8, 16> : std::true_type {};
template <> struct valid_shape<8, 32, 16> : std::true_type {};
template <> struct valid_shape<16, 16, 8> : std::true_type {};

inline float to_f(float v) { return v; }
inline float to_f(__half v) { return __half2float(v); }
inline float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
inline int to_i(signed char v) { return v; }
inline int to_i(unsigned char v) { return v; }
inline int to_i(int v) { return v; }

// tf32 keeps 10 mantissa bits; the tensor core ignores the rest.
inline float tf32_trunc(float v) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    b &= 0xffffe000u;
    std::memcpy(&v, &b, 4);
    return v;
}

inline unsigned lane() { return kl_emu_cur->lane; }

inline void check_ldm(unsigned ldm, size_t elem, const char *what) {
    // CUDA: ldm must be a multiple of 16 bytes (8 for 16-bit elements, 4 for float, 16 for int8).
    if ((ldm * elem) % 16 != 0) {
        char msg[200];
        std::snprintf(msg, sizeof msg,
                      "wmma::%s: ldm %u is not a multiple of 16 bytes (%u elements of %zu bytes); CUDA requires it",
                      what, ldm, (unsigned)(16 / elem), elem);
        kl_emu_fail(KL_EMU_ERR_MISUSE, msg);
    }
}
} // namespace detail

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
class fragment {
    static_assert(detail::valid_shape<M, N, K>::value, "wmma shape not supported (m16n16k16, m32n8k16, m8n32k16, m16n16k8 for tf32)");
    // The fragments are NVIDIA's: spread over 32 lanes. AMD's counterpart (rocWMMA over MFMA)
    // spreads them over 64, so a wmma kernel is NVIDIA-only and does not build with --emu-warp 64.
    static_assert(sizeof(T) > 0 && KL_EMU_WARP_SIZE == 32,
                  "nvcuda::wmma needs 32-lane warps: this kernel is NVIDIA-only (needs: [nvidia] in lab.yaml)");

  public:
    using element_type = typename detail::storage<T>::type;
    using storage_element_type = element_type;
    static constexpr int rows = detail::shape<Use, M, N, K>::rows;
    static constexpr int cols = detail::shape<Use, M, N, K>::cols;
    static constexpr int num_elements = rows * cols / 32;
    static constexpr int num_storage_elements = num_elements;
    element_type x[num_elements];
};

template <typename Use, int M, int N, int K, typename T, typename L, typename V>
inline void fill_fragment(fragment<Use, M, N, K, T, L> &f, const V &v) {
    using E = typename fragment<Use, M, N, K, T, L>::element_type;
    const E e = E(v);
    for (int i = 0; i < f.num_elements; i++) f.x[i] = e;
}

// Matrix A or B with its layout in the type.
template <typename Use, int M, int N, int K, typename T, typename L, typename P>
inline void load_matrix_sync(fragment<Use, M, N, K, T, L> &f, const P *p, unsigned ldm) {
    static_assert(!std::is_same<L, void>::value, "a matrix_a/matrix_b fragment needs row_major or col_major");
    using F = fragment<Use, M, N, K, T, L>;
    detail::check_ldm(ldm, sizeof(P), "load_matrix_sync");
    const unsigned base = detail::lane() * F::num_elements;
    for (int i = 0; i < F::num_elements; i++) {
        const unsigned idx = base + i, r = idx / F::cols, c = idx % F::cols;
        f.x[i] = std::is_same<L, row_major>::value ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
    }
}

// The accumulator, with the layout given at the call.
template <int M, int N, int K, typename T>
inline void load_matrix_sync(fragment<accumulator, M, N, K, T, void> &f, const T *p, unsigned ldm, layout_t layout) {
    using F = fragment<accumulator, M, N, K, T, void>;
    detail::check_ldm(ldm, sizeof(T), "load_matrix_sync");
    const unsigned base = detail::lane() * F::num_elements;
    for (int i = 0; i < F::num_elements; i++) {
        const unsigned idx = base + i, r = idx / F::cols, c = idx % F::cols;
        f.x[i] = layout == mem_row_major ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
    }
}

template <int M, int N, int K, typename T>
inline void store_matrix_sync(T *p, const fragment<accumulator, M, N, K, T, void> &f, unsigned ldm, layout_t layout) {
    using F = fragment<accumulator, M, N, K, T, void>;
    detail::check_ldm(ldm, sizeof(T), "store_matrix_sync");
    const unsigned base = detail::lane() * F::num_elements;
    for (int i = 0; i < F::num_elements; i++) {
        const unsigned idx = base + i, r = idx / F::cols, c = idx % F::cols;
        if (layout == mem_row_major)
            p[(size_t)r * ldm + c] = f.x[i];
        else
            p[(size_t)c * ldm + r] = f.x[i];
    }
}

namespace detail {
template <typename FD, typename FA, typename FB, typename FC>
struct mma_args {
    FD *d;
    const FA *a;
    const FB *b;
    const FC *c;
};

template <typename Acc, typename E> inline Acc conv(E v) { return (Acc)to_f(v); }
template <> inline int conv<int, signed char>(signed char v) { return v; }
template <> inline int conv<int, unsigned char>(unsigned char v) { return v; }
template <> inline int conv<int, int>(int v) { return v; }

template <int M, int N, int K, typename TA, typename TB, typename TC, typename TD, typename LA, typename LB>
void mma_exec(void *const *lanes, uint64_t mask) {
    using FA = fragment<matrix_a, M, N, K, TA, LA>;
    using FB = fragment<matrix_b, M, N, K, TB, LB>;
    using FC = fragment<accumulator, M, N, K, TC, void>;
    using FD = fragment<accumulator, M, N, K, TD, void>;
    using Args = mma_args<FD, FA, FB, FC>;
    using Acc = typename std::conditional<std::is_same<TD, int>::value, int, float>::type;
    constexpr bool tf32 = std::is_same<TA, precision::tf32>::value;
    Acc A[M * K] = {}, B[K * N] = {}, C[M * N] = {};
    for (int l = 0; l < 32; l++) {
        const Args *g = static_cast<const Args *>(lanes[l]);
        if (!(mask & ((uint64_t)1 << l)) || g == nullptr) continue;
        for (int i = 0; i < FA::num_elements; i++) {
            Acc v = conv<Acc>(g->a->x[i]);
            if (tf32) v = (Acc)tf32_trunc((float)v);
            A[l * FA::num_elements + i] = v;
        }
        for (int i = 0; i < FB::num_elements; i++) {
            Acc v = conv<Acc>(g->b->x[i]);
            if (tf32) v = (Acc)tf32_trunc((float)v);
            B[l * FB::num_elements + i] = v;
        }
        for (int i = 0; i < FC::num_elements; i++) C[l * FC::num_elements + i] = conv<Acc>(g->c->x[i]);
    }
    Acc D[M * N];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            Acc s = C[i * N + j];
            for (int k = 0; k < K; k++) s += A[i * K + k] * B[k * N + j];
            D[i * N + j] = s;
        }
    for (int l = 0; l < 32; l++) {
        const Args *g = static_cast<const Args *>(lanes[l]);
        if (!(mask & ((uint64_t)1 << l)) || g == nullptr) continue;
        for (int i = 0; i < FD::num_elements; i++) g->d->x[i] = typename FD::element_type(D[l * FD::num_elements + i]);
    }
}
} // namespace detail

template <int M, int N, int K, typename TA, typename LA, typename TB, typename LB, typename TC, typename TD>
inline void mma_sync(fragment<accumulator, M, N, K, TD, void> &d, const fragment<matrix_a, M, N, K, TA, LA> &a,
                     const fragment<matrix_b, M, N, K, TB, LB> &b, const fragment<accumulator, M, N, K, TC, void> &c,
                     bool satf = false) {
    (void)satf;
    using Args = detail::mma_args<fragment<accumulator, M, N, K, TD, void>, fragment<matrix_a, M, N, K, TA, LA>,
                                  fragment<matrix_b, M, N, K, TB, LB>, fragment<accumulator, M, N, K, TC, void>>;
    Args mine{&d, &a, &b, &c};
    kl_emu_warp_exec(0xffffffffu, &mine, &detail::mma_exec<M, N, K, TA, TB, TC, TD, LA, LB>, "wmma::mma_sync");
}

// __float_to_tf32 rounds to the nearest tf32 value (ties away from zero), as cvt.rna.tf32.f32.
inline float __float_to_tf32(float v) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    if ((b & 0x7fffffffu) < 0x7f800000u) {
        b += 0x1000u;
        b &= 0xffffe000u;
    }
    std::memcpy(&v, &b, 4);
    return v;
}

} // namespace wmma
} // namespace nvcuda
