package cuda

// NCCLTimeoutEnv names an environment variable holding how long (a Go duration, "90s") a rank
// waits for the others in ncclCommInitRank and in each call, before the communicator is aborted.
const NCCLTimeoutEnv = "KERNELLABS_NCCL_TIMEOUT"
