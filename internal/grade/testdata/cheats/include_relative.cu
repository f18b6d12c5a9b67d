// cheat: includes the reference solution by a path relative to the lab's folder, which the
// build's include path held before builds were hermetic. Expected: compile (the file is not found:
// only labs/common and emu/ are searched).
#include "exercises/ex1_smem_tiling.cu"
