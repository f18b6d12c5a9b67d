// cheat: reaches another lab's files (here lab 02's own exercise, through lab 03's folder) with
// a path that climbs out of labs/common. Expected: compile (the include scan refuses `..`).
#include "kl.cuh"
#include "../03_grouped_gemm/../02_gemm/exercises/ex1_smem_tiling.cu"
