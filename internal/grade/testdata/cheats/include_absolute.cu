// cheat: includes the reference solution by an absolute path (where a course tree is often
// checked out). Expected: compile (the include scan refuses absolute paths, whatever they name).
#include "/work/kernel-labs/labs/02_gemm/exercises/ex1_smem_tiling.cu"
