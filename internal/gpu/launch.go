package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
	"strings"
)

// LaunchConfig is a kernel launch shape.
type LaunchConfig struct {
	Grid        Dim3
	Block       Dim3
	SharedBytes int    // dynamic shared memory
	Stream      Stream // nil: the default stream
}

// GridFor sizes a grid-stride launch: enough blocks of threads for work items, but no more than
// blocksPerSM on each of sms multiprocessors (each thread then loops), and at least one block.
func GridFor(work, threads, sms, blocksPerSM int) int {
	threads, sms, blocksPerSM = max(threads, 1), max(sms, 1), max(blocksPerSM, 1)
	return max(1, min((work+threads-1)/threads, sms*blocksPerSM))
}

// DevicePointer is implemented by values that stand for a device address (Buffer[T]).
type DevicePointer interface{ DevicePtr() Ptr }

// RawArg passes bytes as a by-value parameter (a struct, or a 128-byte CUtensorMap).
type RawArg []byte

// Launch checks args against the kernel's parameters and launches it. Arguments are Go values:
// a Buffer or Ptr for a pointer parameter, int32/uint32/float32 for 4-byte scalars,
// int64/uint64/float64 for 8-byte ones, RawArg for structs. A plain Go int is refused, since C's
// int is 4 bytes and Go's is 8: say int32 or int64.
func Launch(k Kernel, cfg LaunchConfig, args ...any) error {
	params, err := k.Params()
	if err != nil {
		return fmt.Errorf("launch %s: reading parameter info: %w", k.Name(), err)
	}
	packed, err := PackArgs(k.Name(), params, args)
	if err != nil {
		return err
	}
	if err := checkShape(k.Name(), cfg); err != nil {
		return err
	}
	if err := k.LaunchPacked(cfg, packed); err != nil {
		return fmt.Errorf("launch %s grid %v block %v shared %d: %w", k.Name(), cfg.Grid, cfg.Block, cfg.SharedBytes, err)
	}
	return nil
}

func checkShape(name string, cfg LaunchConfig) error {
	for _, d := range []struct {
		what string
		v    Dim3
	}{{"grid", cfg.Grid}, {"block", cfg.Block}} {
		if d.v.X == 0 || d.v.Y == 0 || d.v.Z == 0 {
			return fmt.Errorf("launch %s: %s %v has a zero dimension (every dimension must be at least 1)", name, d.what, d.v)
		}
	}
	if cfg.SharedBytes < 0 {
		return fmt.Errorf("launch %s: negative dynamic shared memory %d", name, cfg.SharedBytes)
	}
	return nil
}

// PackArgs turns Go values into the kernel's parameter bytes, checking count, size and (when the
// backend knows the C types) kind. The error names the kernel, the parameter and what to pass.
func PackArgs(kernel string, params []Param, args []any) ([][]byte, error) {
	if len(args) != len(params) {
		return nil, fmt.Errorf("launch %s: got %d arguments, the kernel takes %d (%s)",
			kernel, len(args), len(params), describeParams(params))
	}
	out := make([][]byte, len(args))
	for i, a := range args {
		b, kind, err := packOne(a)
		if err != nil {
			return nil, fmt.Errorf("launch %s: argument %d%s: %w", kernel, i, paramLabel(params[i]), err)
		}
		p := params[i]
		if len(b) != p.Size {
			return nil, fmt.Errorf("launch %s: argument %d%s is %d bytes (%T), the parameter is %d bytes",
				kernel, i, paramLabel(p), len(b), a, p.Size)
		}
		if want := kindOfCType(p.Type); want != "" && kind != "" && want != kind {
			return nil, fmt.Errorf("launch %s: argument %d%s is %s (%T), the parameter is %s",
				kernel, i, paramLabel(p), withArticle(kind), a, withArticle(want))
		}
		out[i] = b
	}
	return out, nil
}

func paramLabel(p Param) string {
	if p.Type == "" {
		return ""
	}
	return fmt.Sprintf(" (%s)", p.Type)
}

func describeParams(ps []Param) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		if p.Type != "" {
			parts[i] = p.Type
		} else {
			parts[i] = fmt.Sprintf("%d bytes", p.Size)
		}
	}
	return strings.Join(parts, ", ")
}

// packOne returns the bytes of one argument and its kind: "pointer", "integer", "float" or ""
// (raw bytes, kind unknown).
func packOne(a any) ([]byte, string, error) {
	le := binary.LittleEndian
	switch v := a.(type) {
	case DevicePointer:
		return le.AppendUint64(nil, uint64(v.DevicePtr())), "pointer", nil
	case Ptr:
		return le.AppendUint64(nil, uint64(v)), "pointer", nil
	case int32:
		return le.AppendUint32(nil, uint32(v)), "integer", nil
	case uint32:
		return le.AppendUint32(nil, v), "integer", nil
	case int64:
		return le.AppendUint64(nil, uint64(v)), "integer", nil
	case uint64:
		return le.AppendUint64(nil, v), "integer", nil
	case float32:
		return le.AppendUint32(nil, math.Float32bits(v)), "float", nil
	case float64:
		return le.AppendUint64(nil, math.Float64bits(v)), "float", nil
	case RawArg:
		return append([]byte(nil), v...), "", nil
	case int, uint:
		return nil, "", fmt.Errorf("a Go %T has no fixed C size: pass int32 for a C int or int64 for a long long", a)
	case nil:
		return nil, "", fmt.Errorf("nil argument: pass a Buffer, a Ptr or a sized number")
	default:
		return nil, "", fmt.Errorf("unsupported argument type %T (use a Buffer, Ptr, int32, uint32, int64, uint64, float32, float64 or RawArg)", a)
	}
}

var vectorTypeRE = regexp.MustCompile(`(char|short|int|long|longlong|float|double|half|bfloat16)[1-4]$`)

// kindOfCType classifies a C parameter type as the emulator's registry spells it.
func kindOfCType(t string) string {
	t = strings.TrimSpace(t)
	switch {
	case t == "":
		return ""
	case strings.HasSuffix(t, "*"):
		return "pointer"
	case vectorTypeRE.MatchString(t):
		return "" // float2, int4...: a struct passed by value; its size alone is checked
	case strings.Contains(t, "float") || strings.Contains(t, "double"):
		return "float"
	case strings.Contains(t, "int") || strings.Contains(t, "long") || strings.Contains(t, "short") ||
		strings.Contains(t, "char") || strings.Contains(t, "size_t") || strings.Contains(t, "unsigned") || t == "bool":
		return "integer"
	}
	return "" // a struct or a type we do not classify: size alone is checked
}

func withArticle(kind string) string {
	if kind == "integer" {
		return "an integer"
	}
	return "a " + kind
}
