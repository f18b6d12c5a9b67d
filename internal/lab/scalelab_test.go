package lab_test

import (
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest/scalelab"
)

// The engine's test lab (internal/labtest/scalelab: y = 2x on the fake backend) registers itself
// as 99_test; it also runs as 98_concurrent (concurrent_test.go) and 98_peer (peer_test.go). This
// file is of the external test package because scalelab imports lab; the driver registry is the
// same in the one test binary.
func init() {
	lab.RegisterDriver("98_concurrent", scalelab.Driver{})
	lab.RegisterDriver("98_peer", scalelab.Driver{})
}
