package lab

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// UploadShared is AllocShared for an input: this rank's part of a shared buffer, a copy of host
// (every rank calls it at the same point, each with its own host): what peers read, as Upload
// is for a buffer of this rank alone.
func UploadShared[T gpu.Elem](e *Env, name string, host []T) (*Shared[T], error) {
	s, err := AllocShared[T](e, name, len(host))
	if err != nil {
		return nil, err
	}
	if err := s.Mine.CopyFromHost(host, nil); err != nil {
		return nil, fmt.Errorf("uploading %s: %w", name, err)
	}
	return s, nil
}
