// cheat: builds the path of the reference solution with macros, so that no #include line names
// it: from labs/common, "../02_gemm/exercises/ex1_smem_tiling.cu" is the reference. Expected:
// compile (the compiler may not read the course tree: the sandbox denies it, and the dependency
// audit of the files the compiler read fails the build).
#include "kl.cuh"
#define KL_STR(x) #x
#define KL_PATH(x) KL_STR(x)
#include KL_PATH(../02_gemm/exercises/ex1_smem_tiling.cu)
