package gpu

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Opener creates a backend. It returns an error wrapping ErrLibraryMissing when the backend's
// libraries are absent, and ErrNoDevice when they load but see no device.
type Opener func() (Backend, error)

var (
	regMu    sync.Mutex
	registry = map[string]Opener{}
	// autoOrder is the preference of "auto": real hardware first, the emulator last.
	autoOrder = []string{"cuda", "hip", "emu"}
)

// Register makes a backend available by name. Backends call it from init.
func Register(name string, open Opener) {
	regMu.Lock()
	defer regMu.Unlock()
	registry[name] = open
}

// Backends lists the registered backend names.
func Backends() []string {
	regMu.Lock()
	defer regMu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Open opens the named backend. "auto" tries real hardware first and falls back to the
// emulator; the returned note says in one line what was chosen and why (empty when the
// first choice worked).
func Open(name string) (b Backend, note string, err error) {
	regMu.Lock()
	open, ok := registry[name]
	regMu.Unlock()
	if name != "auto" {
		if !ok {
			return nil, "", fmt.Errorf("unknown backend %q (available: %s, auto)", name, strings.Join(Backends(), ", "))
		}
		b, err := open()
		return b, "", err
	}
	var reasons []string
	for _, n := range autoOrder {
		regMu.Lock()
		open, ok := registry[n]
		regMu.Unlock()
		if !ok {
			continue
		}
		b, err := open()
		if err == nil {
			if len(reasons) > 0 {
				note = fmt.Sprintf("backend auto: using %s (%s)", n, strings.Join(reasons, "; "))
			}
			return b, note, nil
		}
		reasons = append(reasons, fmt.Sprintf("%s unavailable: %v", n, err))
	}
	return nil, "", fmt.Errorf("no backend available: %s", strings.Join(reasons, "; "))
}
