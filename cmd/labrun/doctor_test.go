package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu/backends"
	"github.com/kernel-labs/kernellabs/internal/term"
)

// Doctor shows the backend labrun uses here first, then every other registered backend, each
// with the checks its registration lists.
func TestDoctorGroupsTheCurrentBackendFirst(t *testing.T) {
	checks, usable := diagnose()
	for _, current := range []string{"emu", "cuda"} {
		var b bytes.Buffer
		printDoctor(term.NewWrapWriter(&b, 200), checks, usable, current)
		out := b.String()
		reg, err := backends.Lookup(current)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(out, reg.Title+": "), "%s first:\n%s", current, out)
		for _, other := range registered() {
			assert.Contains(t, out, other.Title, "every registered backend is shown")
		}
	}
	for _, c := range checks {
		_, err := backends.Lookup(c.Backend)
		assert.NoError(t, err, "check %q belongs to a registered backend", c.Name)
	}

	code, out, _ := runCLI("doctor", "--json")
	require.Contains(t, []int{exitOK, exitEnv}, code)
	var doc struct {
		Checks  []finding `json:"checks"`
		Usable  []string  `json:"usable_backends"`
		Current string    `json:"current_backend"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.NotEmpty(t, doc.Checks)
	if len(doc.Usable) > 0 {
		assert.Equal(t, doc.Usable[0], doc.Current, "the current backend is the first usable one")
	} else {
		assert.Equal(t, currentBackend(nil), doc.Current)
	}
}
