package gpu

import (
	"errors"
	"fmt"
	"slices"
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

// Preference lists the registered backends in the order --backend auto tries them: real hardware
// first, the emulator last, then any others by name.
func Preference() []string {
	var out []string
	for _, n := range autoOrder {
		regMu.Lock()
		_, ok := registry[n]
		regMu.Unlock()
		if ok {
			out = append(out, n)
		}
	}
	for _, n := range Backends() {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
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
				what := n
				if n == "emu" {
					what = "the CPU emulator (emu): results are checked, times are not performance figures"
				}
				note = fmt.Sprintf("backend auto: no GPU backend (%s); using %s", strings.Join(reasons, "; "), what)
			}
			return b, note, nil
		}
		reasons = append(reasons, n+": "+shortReason(err))
	}
	return nil, "", fmt.Errorf("no backend available: %s", strings.Join(reasons, "; "))
}

// shortReason says in a few words why a backend did not open, for the one-line note of auto.
func shortReason(err error) string {
	switch {
	case errors.Is(err, ErrLibraryMissing):
		return "its library is not installed"
	case errors.Is(err, ErrNoDevice):
		return "no device visible"
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > 80 {
		msg = msg[:80] + "…"
	}
	return msg
}
