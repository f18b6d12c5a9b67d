// cheat: includes the reference solution through `..` from the submission's folder or from
// labs/common. Expected: compile (the include scan refuses `..`, at this file's line 4).
#include "kl.cuh"
#include "../02_gemm/exercises/ex1_smem_tiling.cu"
