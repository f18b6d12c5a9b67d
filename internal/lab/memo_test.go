package lab

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Memo finds an answer once per key, and asks again after an error.
func TestMemo(t *testing.T) {
	var m Memo[string, int]
	calls := 0
	find := func() (int, error) { calls++; return 7 * calls, nil }
	for range 2 {
		v, err := m.Get("a", find)
		require.NoError(t, err)
		assert.Equal(t, 7, v)
	}
	assert.Equal(t, 1, calls)
	_, err := m.Get("b", func() (int, error) { return 0, errors.New("no") })
	require.Error(t, err)
	v, err := m.Get("b", find)
	require.NoError(t, err)
	assert.Equal(t, 14, v)
}
