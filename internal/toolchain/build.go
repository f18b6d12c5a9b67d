package toolchain

import (
	"context"
	"fmt"
	"sync"
)

// Builder compiles one kernel file for a backend's compiler family.
type Builder func(ctx context.Context, r Request) (Artifact, error)

var (
	buildersMu sync.Mutex
	builders   = map[string]Builder{"nvcc": BuildCUDA}
	versionOf  = map[string]func() (string, error){"nvcc": func() (string, error) {
		nvcc, err := FindNVCC()
		if err != nil {
			return "", err
		}
		return CompilerVersion(nvcc)
	}}
)

// RegisterBuilder adds a compiler family ("c++" for the emulator, "hipcc" later).
func RegisterBuilder(family string, b Builder, version func() (string, error)) {
	buildersMu.Lock()
	defer buildersMu.Unlock()
	builders[family] = b
	versionOf[family] = version
}

// Build compiles r with the named compiler family (gpu.Backend.Toolchain()).
func Build(ctx context.Context, family string, r Request) (Artifact, error) {
	buildersMu.Lock()
	b, ok := builders[family]
	buildersMu.Unlock()
	if !ok {
		return Artifact{}, fmt.Errorf("no builder for compiler family %q", family)
	}
	return b(ctx, r)
}

// Version reports the compiler family's version string.
func Version(family string) (string, error) {
	buildersMu.Lock()
	v, ok := versionOf[family]
	buildersMu.Unlock()
	if !ok {
		return "", fmt.Errorf("no builder for compiler family %q", family)
	}
	return v()
}
