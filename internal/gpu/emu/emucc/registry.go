package emucc

import (
	"fmt"
	"strconv"
	"strings"
)

// The emulator's registry: the kernel entries of a .cu file, found in its preprocessed text.
//
// The file is preprocessed with KL_EMU_SCAN defined, which makes kl_emu.h turn __global__,
// __shared__ and __launch_bounds__ into the markers below instead of erasing them. Scanning the
// preprocessed text rather than the source means #if blocks, macros that stamp out kernels and
// constants in __launch_bounds__ are all seen as the compiler sees them.
const (
	emuMarkGlobal = "__kl_global__"
	emuMarkShared = "__kl_shared__"
	emuMarkBounds = "__kl_launch_bounds__"
)

// emuEntry is one extern "C" __global__ function of a kernel file.
type emuEntry struct {
	Name       string
	Params     []emuParam
	MaxThreads string // the first __launch_bounds__ argument (a C expression), "" when none
}

// emuParam is one parameter of an entry as written in the source (after preprocessing).
type emuParam struct {
	Type string // e.g. "const float*", "int", "float4"
	Name string // may be empty
}

// emuDynShared is an `extern __shared__ T name[];` declaration.
type emuDynShared struct {
	Type string // element type, e.g. "float"
	Name string
	Rest string // further dimensions after [], e.g. "[32]"
}

type emuTok struct {
	s   string
	str bool // a string or character literal
}

func emuIsIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func emuIsIdent(c byte) bool { return emuIsIdentStart(c) || (c >= '0' && c <= '9') }

// emuTokenize splits preprocessed C++ into identifiers, numbers, literals and punctuation.
// Comments and preprocessor lines (line markers, #pragma) are skipped.
func emuTokenize(src string) []emuTok {
	var toks []emuTok
	lineStart := true
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			lineStart = true
			i++
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '#' && lineStart:
			for i < len(src) && src[i] != '\n' {
				if src[i] == '\\' && i+1 < len(src) && src[i+1] == '\n' {
					i++
				}
				i++
			}
			continue
		}
		lineStart = false
		switch {
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				i = len(src)
			} else {
				i += j + 4
			}
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j < len(src) {
				j++
			}
			toks = append(toks, emuTok{s: src[i:j], str: true})
			i = j
		case emuIsIdentStart(c):
			j := i + 1
			for j < len(src) && emuIsIdent(src[j]) {
				j++
			}
			// A raw or prefixed string literal: R"(...)", u8"...".
			if j < len(src) && src[j] == '"' && strings.HasSuffix(src[i:j], "R") {
				end := strings.Index(src[j:], ")\"")
				if end < 0 {
					end = len(src) - j - 2
				}
				toks = append(toks, emuTok{s: src[i : j+end+2], str: true})
				i = j + end + 2
				continue
			}
			toks = append(toks, emuTok{s: src[i:j]})
			i = j
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9'):
			j := i + 1
			for j < len(src) && (emuIsIdent(src[j]) || src[j] == '.' ||
				((src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E' || src[j-1] == 'p' || src[j-1] == 'P'))) {
				j++
			}
			toks = append(toks, emuTok{s: src[i:j]})
			i = j
		case c == ':' && i+1 < len(src) && src[i+1] == ':':
			toks = append(toks, emuTok{s: "::"})
			i += 2
		default:
			toks = append(toks, emuTok{s: string(c)})
			i++
		}
	}
	return toks
}

// emuMatch returns the index of the token that closes the bracket opened at toks[i].
func emuMatch(toks []emuTok, i int) int {
	open := toks[i].s
	var closeTok string
	switch open {
	case "(":
		closeTok = ")"
	case "[":
		closeTok = "]"
	case "{":
		closeTok = "}"
	default:
		return -1
	}
	depth := 0
	for j := i; j < len(toks); j++ {
		if toks[j].str {
			continue
		}
		switch toks[j].s {
		case open:
			depth++
		case closeTok:
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// scan finds the extern "C" kernel entries and the dynamic shared arrays in preprocessed
// C++ that was produced with KL_EMU_SCAN defined.
func scan(pre string) ([]emuEntry, []emuDynShared, error) {
	toks := emuTokenize(pre)
	var entries []emuEntry
	var shared []emuDynShared
	seen := map[string]bool{}
	seenShared := map[string]bool{}
	// braces: for each open brace, whether it opened an extern "C" { ... } block.
	var braces []bool
	declStart := 0 // first token of the current declaration
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.str {
			continue
		}
		switch t.s {
		case "{":
			externBlock := i >= 2 && toks[i-2].s == "extern" && toks[i-1].str && toks[i-1].s == `"C"`
			braces = append(braces, externBlock)
			declStart = i + 1
		case "}":
			if len(braces) > 0 {
				braces = braces[:len(braces)-1]
			}
			declStart = i + 1
		case ";":
			declStart = i + 1
		case emuMarkGlobal:
			externC, template := false, false
			for k := declStart; k < i; k++ {
				if toks[k].s == "extern" && k+1 < len(toks) && toks[k+1].str && toks[k+1].s == `"C"` {
					externC = true
				}
				if toks[k].s == "template" && !toks[k].str {
					template = true
				}
			}
			if len(braces) > 0 && braces[len(braces)-1] {
				externC = true
			}
			e, end, isDef, err := emuParseFunc(toks, i+1)
			if err != nil {
				return nil, nil, err
			}
			// Skip the body of a definition so that its braces do not confuse the scan.
			if isDef {
				close := emuMatch(toks, end)
				if close < 0 {
					return nil, nil, fmt.Errorf("kernel %s: unbalanced braces in its body", e.Name)
				}
				// Look for extern __shared__ inside the body before skipping it.
				sh, err := scanShared(toks[end+1 : close])
				if err != nil {
					return nil, nil, err
				}
				for _, s := range sh {
					if !seenShared[s.Name] {
						seenShared[s.Name] = true
						shared = append(shared, s)
					}
				}
				i = close
				declStart = close + 1
			} else {
				i = end
				declStart = end + 1
			}
			if externC && !template && isDef && !seen[e.Name] {
				seen[e.Name] = true
				entries = append(entries, e)
			}
		case emuMarkShared:
			end := i
			for end < len(toks) && toks[end].s != ";" {
				end++
			}
			if end < len(toks) {
				end++
			}
			sh, err := scanShared(toks[declStart:end])
			if err != nil {
				return nil, nil, err
			}
			if len(sh) > 0 && !seenShared[sh[0].Name] && emuDeclHasExtern(toks[declStart:i]) {
				seenShared[sh[0].Name] = true
				shared = append(shared, sh[0])
			}
		}
	}
	return entries, shared, nil
}

func emuDeclHasExtern(toks []emuTok) bool {
	for _, t := range toks {
		if t.s == "extern" && !t.str {
			return true
		}
	}
	return false
}

// scanShared finds `extern __shared__ T name[]...;` declarations in toks.
func scanShared(toks []emuTok) ([]emuDynShared, error) {
	var out []emuDynShared
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].s != "extern" || toks[i].str {
			continue
		}
		j := i + 1
		for j < len(toks) && toks[j].s != emuMarkShared && toks[j].s != ";" && toks[j].s != "{" {
			j++
		}
		if j >= len(toks) || toks[j].s != emuMarkShared {
			continue
		}
		end := j
		for end < len(toks) && toks[end].s != ";" {
			end++
		}
		decl := emuStripAttrs(append(append([]emuTok{}, toks[i+1:j]...), toks[j+1:end]...))
		// find NAME [ ]
		k := -1
		for x := 0; x+2 < len(decl); x++ {
			if decl[x+1].s == "[" && decl[x+2].s == "]" && emuIsIdentTok(decl[x]) {
				k = x
				break
			}
		}
		if k < 0 {
			i = end
			continue // a sized extern array, or something else: not dynamic shared memory
		}
		typ := emuJoin(decl[:k])
		if typ == "" {
			return nil, fmt.Errorf("extern __shared__ %s[]: no element type", decl[k].s)
		}
		out = append(out, emuDynShared{Type: typ, Name: decl[k].s, Rest: emuJoin(decl[k+3:])})
		i = end
	}
	return out, nil
}

func emuIsIdentTok(t emuTok) bool {
	return !t.str && t.s != "" && emuIsIdentStart(t.s[0])
}

// emuStripAttrs removes attributes and qualifiers that do not belong in a type string.
func emuStripAttrs(toks []emuTok) []emuTok {
	var out []emuTok
	for i := 0; i < len(toks); i++ {
		switch toks[i].s {
		case "__attribute__", "alignas", "__align__", "__declspec", emuMarkBounds:
			if i+1 < len(toks) && toks[i+1].s == "(" {
				if e := emuMatch(toks, i+1); e > 0 {
					i = e
					continue
				}
			}
			continue
		case "[":
			if i+1 < len(toks) && toks[i+1].s == "[" { // [[attribute]]
				depth := 0
				j := i
				for ; j < len(toks); j++ {
					if toks[j].s == "[" {
						depth++
					} else if toks[j].s == "]" {
						depth--
						if depth == 0 {
							break
						}
					}
				}
				i = j
				continue
			}
		case "__restrict", "__restrict__", "restrict", "__grid_constant__", emuMarkShared, "extern", "static",
			"inline", "__inline__", "__forceinline__", "__noinline__", "__device__", "__host__", "thread_local":
			continue
		}
		out = append(out, toks[i])
	}
	return out
}

// emuParseFunc parses `[attrs] ret name (params)` starting at toks[i] (just after the
// __global__ marker). It returns the entry, the index of the token after the parameter list
// ("{" for a definition, ";" for a declaration) and whether it is a definition.
func emuParseFunc(toks []emuTok, i int) (emuEntry, int, bool, error) {
	var e emuEntry
	j := i
	for ; j < len(toks); j++ {
		t := toks[j]
		if t.str {
			continue
		}
		if t.s == ";" || t.s == "{" {
			return e, j, false, fmt.Errorf("a __global__ declaration without a parameter list near %q", t.s)
		}
		if (t.s == "__attribute__" || t.s == "alignas" || t.s == "__declspec") && j+1 < len(toks) && toks[j+1].s == "(" {
			j = emuMatch(toks, j+1)
			if j < 0 {
				return e, 0, false, fmt.Errorf("unbalanced parentheses after __attribute__")
			}
			continue
		}
		if t.s == emuMarkBounds && j+1 < len(toks) && toks[j+1].s == "(" {
			end := emuMatch(toks, j+1)
			if end < 0 {
				return e, 0, false, fmt.Errorf("unbalanced parentheses in __launch_bounds__")
			}
			args := emuSplitTop(toks[j+2 : end])
			if len(args) > 0 {
				e.MaxThreads = emuJoin(args[0])
			}
			j = end
			continue
		}
		if emuIsIdentTok(t) && j+1 < len(toks) && toks[j+1].s == "(" {
			e.Name = t.s
			break
		}
	}
	if e.Name == "" || j+1 >= len(toks) {
		return e, 0, false, fmt.Errorf("a __global__ function without a name")
	}
	open := j + 1
	closeIdx := emuMatch(toks, open)
	if closeIdx < 0 {
		return e, 0, false, fmt.Errorf("kernel %s: unbalanced parentheses in its parameter list", e.Name)
	}
	for _, p := range emuSplitTop(toks[open+1 : closeIdx]) {
		if len(p) == 1 && p[0].s == "void" && closeIdx-open == 2 {
			break
		}
		e.Params = append(e.Params, emuParseParam(p))
	}
	// after the parameter list: qualifiers, then { or ;
	k := closeIdx + 1
	for k < len(toks) && toks[k].s != "{" && toks[k].s != ";" {
		if toks[k].s == "(" {
			if m := emuMatch(toks, k); m > 0 {
				k = m
			}
		}
		k++
	}
	if k >= len(toks) {
		return e, 0, false, fmt.Errorf("kernel %s: no body or ';' after the parameter list", e.Name)
	}
	return e, k, toks[k].s == "{", nil
}

// emuSplitTop splits tokens at top-level commas.
func emuSplitTop(toks []emuTok) [][]emuTok {
	var out [][]emuTok
	depth, angle := 0, 0
	start := 0
	for i, t := range toks {
		if t.str {
			continue
		}
		switch t.s {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case "<":
			angle++
		case ">":
			if angle > 0 {
				angle--
			}
		case ",":
			if depth == 0 && angle == 0 {
				out = append(out, toks[start:i])
				start = i + 1
			}
		}
	}
	if start < len(toks) {
		out = append(out, toks[start:])
	}
	return out
}

var emuTypeWords = map[string]bool{
	"void": true, "bool": true, "char": true, "short": true, "int": true, "long": true, "float": true,
	"double": true, "signed": true, "unsigned": true, "const": true, "volatile": true, "struct": true,
	"class": true, "enum": true, "union": true, "typename": true, "__int128": true,
}

func emuParseParam(p []emuTok) emuParam {
	p = emuStripAttrs(p)
	// drop a default argument
	for i, t := range p {
		if t.s == "=" && !t.str {
			p = p[:i]
			break
		}
	}
	// an array parameter decays to a pointer: T name[N]
	for i, t := range p {
		if t.s == "[" && !t.str && i > 0 && emuIsIdentTok(p[i-1]) && !emuTypeWords[p[i-1].s] {
			return emuParam{Type: emuJoin(p[:i-1]) + "*", Name: p[i-1].s}
		}
	}
	name := ""
	if n := len(p); n >= 2 && emuIsIdentTok(p[n-1]) && !emuTypeWords[p[n-1].s] && p[n-2].s != "::" {
		name = p[n-1].s
		p = p[:n-1]
	}
	typ := emuJoin(p)
	// a top-level const after the last * does not concern the caller
	typ = strings.TrimSuffix(typ, " const")
	return emuParam{Type: typ, Name: name}
}

// emuJoin renders tokens as a C type or expression with conventional spacing.
func emuJoin(toks []emuTok) string {
	var b strings.Builder
	prev := ""
	for i, t := range toks {
		s := t.s
		if i > 0 {
			space := true
			switch s {
			case "*", "&", ",", ">", "::", "<", ")", "]", "[", "(":
				space = false
			}
			switch prev {
			case "::", "<", "(", "[":
				space = false
			case ",":
				space = true
			case "*", "&":
				space = emuIsIdentTok(t)
			}
			if space {
				b.WriteByte(' ')
			}
		}
		b.WriteString(s)
		prev = s
	}
	return b.String()
}

// generate writes the registry file compiled together with the kernel file, which it includes.
func generate(includeName string, entries []emuEntry, shared []emuDynShared) string {
	var b strings.Builder
	b.WriteString("// Generated by the Kernel Labs toolchain: the CPU emulator's registry of " + includeName + ".\n")
	b.WriteString("// Do not edit: it is rebuilt whenever the kernel file changes.\n")
	// The emulator's CUDA surface first, as nvcc's is there even in a file that includes nothing.
	b.WriteString("#include \"kl_emu.h\"\n")
	fmt.Fprintf(&b, "#include %s\n\n", strconv.Quote(includeName))
	if len(shared) > 0 {
		b.WriteString("// extern __shared__ arrays: room for the largest dynamic shared memory, per worker thread.\n")
	}
	for _, s := range shared {
		fmt.Fprintf(&b, "__attribute__((aligned(128))) thread_local %s %s[KL_EMU_MAX_DYN_SHARED / sizeof(%s%s)]%s;\n",
			s.Type, s.Name, s.Type, s.Rest, s.Rest)
	}
	b.WriteString("\nnamespace {\n")
	for i, e := range entries {
		fmt.Fprintf(&b, "const char *const kl_emu_types_%d[] = {", i)
		for _, p := range e.Params {
			b.WriteString(strconv.Quote(p.Type) + ", ")
		}
		b.WriteString("nullptr};\n")
	}
	b.WriteString("} // namespace\n\n")
	b.WriteString("extern \"C\" KL_EMU_EXPORT const kl_emu_entry kl_emu_entries[] = {\n")
	for i, e := range entries {
		bound := "0"
		if e.MaxThreads != "" {
			bound = "(int)(" + e.MaxThreads + ")"
		}
		fmt.Fprintf(&b, "    KL_EMU_ENTRY(%s, kl_emu_types_%d, %d, %s),\n", e.Name, i, len(e.Params), bound)
	}
	if len(entries) == 0 {
		b.WriteString("    {nullptr, nullptr, 0, nullptr, nullptr, 0, 0, KL_EMU_WARP_SIZE},\n")
	}
	b.WriteString("};\n")
	fmt.Fprintf(&b, "extern \"C\" KL_EMU_EXPORT const int kl_emu_num_entries = %d;\n", len(entries))
	b.WriteString("extern \"C\" KL_EMU_EXPORT const int kl_emu_module_abi = KL_EMU_ABI_VERSION;\n")
	return b.String()
}
