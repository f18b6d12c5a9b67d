package dl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProbe(t *testing.T) {
	name, err := Probe("libdoes-not-exist.so.9", "libc.so.6")
	require.NoError(t, err)
	assert.Equal(t, "libc.so.6", name)
	_, err = Probe("libdoes-not-exist.so.9")
	assert.ErrorContains(t, err, "libdoes-not-exist.so.9")
}
