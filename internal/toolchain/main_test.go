package toolchain

import (
	"os"
	"testing"

	"github.com/kernel-labs/kernellabs/internal/sandbox"
)

// The test binary stands in for labrun when a submission's compiler is started in the sandbox
// ("labrun __sandbox POLICY -- PROGRAM").
func TestMain(m *testing.M) { os.Exit(sandbox.StandIn(m.Run)) }
