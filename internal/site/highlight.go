package site

import (
	"fmt"
	"html"
	"html/template"
	"path/filepath"
	"strings"
)

// A small syntax highlighter for the languages the course shows: CUDA/C++, Go, shell and YAML.
// It knows keywords, types, CUDA built-ins, comments, strings, numbers and preprocessor lines;
// that is all a reader needs, and it keeps the site free of a large dependency.

// Token classes; each becomes a CSS class hl-X.
const (
	tkPlain   = 0
	tkKeyword = 'k'
	tkType    = 't'
	tkBuiltin = 'b'
	tkComment = 'c'
	tkString  = 's'
	tkNumber  = 'n'
	tkPreproc = 'p'
)

type token struct {
	class byte
	text  string
	pos   int // byte offset in the source
}

func set(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

var cKeywords = set(`if else for while do switch case default break continue return goto sizeof
	struct union enum class typedef template typename namespace using public private protected
	static const constexpr volatile extern inline virtual operator new delete this true false
	nullptr static_cast reinterpret_cast const_cast dynamic_cast static_assert alignas alignof
	decltype auto register restrict __restrict__ __global__ __device__ __host__ __shared__
	__constant__ __managed__ __forceinline__ __noinline__ __launch_bounds__ __grid_constant__
	KL_LAUNCH_BOUNDS
	asm __asm__ #pragma`)

var cTypes = set(`void bool char short int long float double signed unsigned size_t ptrdiff_t
	int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t uintptr_t half __half
	__half2 __nv_bfloat16 __nv_bfloat162 float2 float3 float4 int2 int3 int4 uint2 uint3 uint4
	double2 longlong2 longlong4 ulonglong2 char4 uchar4 dim3 cudaStream_t wchar_t`)

var cudaBuiltins = set(`threadIdx blockIdx blockDim gridDim warpSize __syncthreads __syncwarp
	__shfl_sync __shfl_up_sync __shfl_down_sync __shfl_xor_sync __ballot_sync __any_sync
	__all_sync __activemask __threadfence __threadfence_block __threadfence_system atomicAdd
	atomicSub atomicMax atomicMin atomicExch atomicCAS atomicAnd atomicOr atomicXor __ldg
	__fmaf_rn __fmul_rn __fadd_rn __float2half __half2float __float2bfloat16 __bfloat162float
	make_float2 make_float4 make_int2 make_int4 __popc __clz __ffs __brev __expf __logf __sinf
	__cosf rsqrtf sqrtf fmaf expf logf fabsf fminf fmaxf __trap clock64 printf nvcuda wmma
	__cvta_generic_to_shared KL_WARP_SIZE`)

var goKeywords = set(`break case chan const continue default defer else fallthrough for func go
	goto if import interface map package range return select struct switch type var true false
	nil iota`)

var goTypes = set(`bool byte complex64 complex128 error float32 float64 int int8 int16 int32
	int64 rune string uint uint8 uint16 uint32 uint64 uintptr any`)

var goBuiltins = set(`append cap clear close complex copy delete imag len make max min new panic
	print println real recover`)

var shKeywords = set(`if then else elif fi for while until do done case esac in function
	return export local set unset shift exit source sudo`)

var shBuiltins = set(`cd echo make go git apt-get apt labrun bin/labrun ./bin/labrun nvcc
	nvidia-smi ncu nsys cat ls mkdir rm cp mv`)

// langOf maps a fence info word or a file extension to a highlighter language.
func langOf(s string) string {
	s = strings.ToLower(strings.TrimPrefix(s, "."))
	switch s {
	case "cu", "cuh", "cuda", "c", "h", "cc", "cpp", "c++", "cxx", "hpp", "hip":
		return "cuda"
	case "go":
		return "go"
	case "sh", "bash", "shell", "console", "zsh":
		return "sh"
	case "yaml", "yml":
		return "yaml"
	case "json":
		return "json"
	}
	return ""
}

// langOfFile picks the language from a file name.
func langOfFile(name string) string {
	if filepath.Base(name) == "Makefile" {
		return "sh"
	}
	return langOf(filepath.Ext(name))
}

// tokenize splits src into classified tokens. Every byte of src is in exactly one token.
func tokenize(lang, src string) []token {
	switch lang {
	case "cuda", "go", "json":
		return lexC(lang, src)
	case "sh":
		return lexShell(src)
	case "yaml":
		return lexYAML(src)
	}
	return []token{{tkPlain, src, 0}}
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdent(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// lexC lexes C, C++, CUDA, Go and JSON.
func lexC(lang, src string) []token {
	var out []token
	n := len(src)
	plainStart := 0
	emit := func(class byte, start, end int) {
		if plainStart < start {
			out = append(out, token{tkPlain, src[plainStart:start], plainStart})
		}
		out = append(out, token{class, src[start:end], start})
		plainStart = end
	}
	lineStart := true
	for i := 0; i < n; {
		c := src[i]
		switch {
		case c == '\n':
			lineStart = true
			i++
			continue
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case c == '/' && i+1 < n && src[i+1] == '/' && lang != "json":
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				j = n - i
			}
			emit(tkComment, i, i+j)
			i += j
		case c == '/' && i+1 < n && src[i+1] == '*' && lang != "json":
			j := strings.Index(src[i+2:], "*/")
			end := n
			if j >= 0 {
				end = i + 2 + j + 2
			}
			emit(tkComment, i, end)
			i = end
		case c == '#' && lineStart && lang == "cuda":
			// A preprocessor line, with backslash continuations.
			j := i
			for j < n {
				k := strings.IndexByte(src[j:], '\n')
				if k < 0 {
					j = n
					break
				}
				j += k
				if j > 0 && src[j-1] == '\\' {
					j++
					continue
				}
				break
			}
			emit(tkPreproc, i, j)
			i = j
		case c == '"' || (c == '\'' && lang != "json") || (c == '`' && lang == "go"):
			j := i + 1
			for j < n && src[j] != c {
				if src[j] == '\\' && c != '`' {
					j++
				} else if src[j] == '\n' && c != '`' {
					break
				}
				j++
			}
			if j < n && src[j] == c {
				j++
			}
			if j > n {
				j = n
			}
			emit(tkString, i, j)
			i = j
		case isDigit(c) || (c == '.' && i+1 < n && isDigit(src[i+1])):
			if i > 0 && isIdent(src[i-1]) {
				i++
				continue
			}
			j := i + 1
			for j < n && (isIdent(src[j]) || src[j] == '.' || src[j] == '\'' ||
				((src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E' || src[j-1] == 'p'))) {
				j++
			}
			emit(tkNumber, i, j)
			i = j
		case isIdentStart(c):
			j := i + 1
			for j < n && isIdent(src[j]) {
				j++
			}
			w := src[i:j]
			if class := classifyWord(lang, w); class != tkPlain {
				emit(class, i, j)
			}
			i = j
		default:
			i++
		}
		lineStart = false
	}
	if plainStart < n {
		out = append(out, token{tkPlain, src[plainStart:], plainStart})
	}
	return out
}

func classifyWord(lang, w string) byte {
	switch lang {
	case "cuda":
		switch {
		case cKeywords[w]:
			return tkKeyword
		case cTypes[w]:
			return tkType
		case cudaBuiltins[w]:
			return tkBuiltin
		}
	case "go":
		switch {
		case goKeywords[w]:
			return tkKeyword
		case goTypes[w]:
			return tkType
		case goBuiltins[w]:
			return tkBuiltin
		}
	case "json":
		if w == "true" || w == "false" || w == "null" {
			return tkKeyword
		}
	}
	return tkPlain
}

// lexShell lexes shell commands: comments, strings, variables, keywords and known commands.
func lexShell(src string) []token {
	var out []token
	n := len(src)
	plainStart := 0
	emit := func(class byte, start, end int) {
		if plainStart < start {
			out = append(out, token{tkPlain, src[plainStart:start], plainStart})
		}
		out = append(out, token{class, src[start:end], start})
		plainStart = end
	}
	wordStart := true
	cmdPos := true // the next word is a command name
	for i := 0; i < n; {
		c := src[i]
		switch {
		case c == '\n' || c == ';' || c == '|' || c == '&':
			cmdPos, wordStart = true, true
			i++
		case c == ' ' || c == '\t':
			wordStart = true
			i++
		case c == '#' && wordStart:
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				j = n - i
			}
			emit(tkComment, i, i+j)
			i += j
		case c == '"' || c == '\'':
			j := i + 1
			for j < n && src[j] != c {
				if src[j] == '\\' && c == '"' {
					j++
				}
				j++
			}
			if j < n {
				j++
			}
			if j > n {
				j = n
			}
			emit(tkString, i, j)
			i, wordStart, cmdPos = j, false, false
		case c == '$':
			j := i + 1
			if j < n && src[j] == '{' {
				k := strings.IndexByte(src[j:], '}')
				if k >= 0 {
					j += k + 1
				}
			} else {
				for j < n && isIdent(src[j]) {
					j++
				}
			}
			if j == i+1 {
				i++
				continue
			}
			emit(tkBuiltin, i, j)
			i, wordStart = j, false
		case wordStart:
			j := i
			for j < n && !strings.ContainsRune(" \t\n;|&\"'", rune(src[j])) {
				j++
			}
			w := src[i:j]
			switch {
			case shKeywords[w]:
				emit(tkKeyword, i, j)
			case cmdPos && shBuiltins[w]:
				emit(tkBuiltin, i, j)
			case strings.HasPrefix(w, "-"):
				emit(tkNumber, i, j)
			}
			if !shKeywords[w] {
				cmdPos = false
			}
			if j == i {
				j++
			}
			i, wordStart = j, false
		default:
			i++
		}
	}
	if plainStart < n {
		out = append(out, token{tkPlain, src[plainStart:], plainStart})
	}
	return out
}

// lexYAML lexes YAML: comments, keys, strings, numbers.
func lexYAML(src string) []token {
	var out []token
	pos := 0
	for _, line := range strings.SplitAfter(src, "\n") {
		body := strings.TrimRight(line, "\n")
		i := 0
		plain := 0
		emit := func(class byte, s, e int) {
			if plain < s {
				out = append(out, token{tkPlain, body[plain:s], pos + plain})
			}
			out = append(out, token{class, body[s:e], pos + s})
			plain = e
		}
		for i < len(body) && (body[i] == ' ' || body[i] == '-') {
			i++
		}
		if k := strings.Index(body[i:], ":"); k > 0 && !strings.ContainsAny(body[i:i+k], "#\"' ") {
			emit(tkKeyword, i, i+k)
			i += k + 1
		}
		for i < len(body) {
			c := body[i]
			switch {
			case c == '#' && (i == 0 || body[i-1] == ' '):
				emit(tkComment, i, len(body))
				i = len(body)
			case c == '"' || c == '\'':
				j := strings.IndexByte(body[i+1:], c)
				e := len(body)
				if j >= 0 {
					e = i + 1 + j + 1
				}
				emit(tkString, i, e)
				i = e
			case isDigit(c) && (i == 0 || !isIdent(body[i-1])):
				j := i
				for j < len(body) && (isIdent(body[j]) || body[j] == '.') {
					j++
				}
				emit(tkNumber, i, j)
				i = j
			default:
				i++
			}
		}
		if plain < len(line) {
			out = append(out, token{tkPlain, line[plain:], pos + plain})
		}
		pos += len(line)
	}
	return out
}

// highlight renders src as HTML spans. With firstLine > 0 every line is wrapped in
// <span class="line"> so that CSS can number the lines starting at firstLine.
func highlight(lang, src string, firstLine int) template.HTML {
	src = strings.TrimRight(src, "\n")
	toks := tokenize(lang, src)
	var b strings.Builder
	b.Grow(len(src) * 2)
	numbered := firstLine > 0
	if numbered {
		b.WriteString(`<span class="line">`)
	}
	for _, t := range toks {
		parts := []string{t.text}
		if numbered || t.class != tkPlain {
			parts = strings.Split(t.text, "\n")
		}
		for pi, p := range parts {
			if pi > 0 {
				if numbered {
					b.WriteString("</span>\n<span class=\"line\">")
				} else {
					b.WriteByte('\n')
				}
			}
			if p == "" {
				continue
			}
			if t.class != tkPlain {
				fmt.Fprintf(&b, `<span class="hl-%c">%s</span>`, t.class, html.EscapeString(p))
			} else {
				b.WriteString(html.EscapeString(p))
			}
		}
	}
	if numbered {
		b.WriteString(`</span>`)
	}
	return template.HTML(b.String())
}

// codeBlock renders a highlighted <pre> block.
func codeBlock(lang, src string, firstLine int) string {
	class := "code"
	attr := ""
	if firstLine > 0 {
		class += " numbered"
		attr = fmt.Sprintf(` style="counter-reset:ln %d"`, firstLine-1)
	}
	langClass := ""
	if lang != "" {
		langClass = ` class="language-` + lang + `"`
	}
	return fmt.Sprintf(`<pre class="%s"><code%s%s>%s</code></pre>`, class, langClass, attr, highlight(lang, src, firstLine))
}

// span is a range of lines of a file, 1-based and inclusive.
type span struct{ first, last int }

// findFunction finds the definition of a function (with its template line and the comment above
// it) in C/CUDA or Go source, and lists the functions defined there for error messages.
func findFunction(lang, src, name string) (span, []string, bool) {
	toks := tokenize(lang, src)
	// Significant tokens only: drop comments, strings, preprocessor lines; split plain text
	// into identifiers and punctuation.
	type sig struct {
		text string
		pos  int
	}
	var sigs []sig
	for _, t := range toks {
		switch t.class {
		case tkComment, tkString, tkPreproc:
			continue
		}
		s := t.text
		for i := 0; i < len(s); {
			c := s[i]
			switch {
			case isIdentStart(c):
				j := i + 1
				for j < len(s) && isIdent(s[j]) {
					j++
				}
				sigs = append(sigs, sig{s[i:j], t.pos + i})
				i = j
			case c == '{' || c == '}' || c == '(' || c == ')' || c == ';':
				sigs = append(sigs, sig{s[i : i+1], t.pos + i})
				i++
			default:
				i++
			}
		}
	}
	var defined []string
	var found span
	ok := false
	depth := 0
	// Blocks of extern "C" { ... } and namespace x { ... } do not nest definitions.
	var transparent []bool
	for i := 0; i < len(sigs); i++ {
		s := sigs[i]
		switch s.text {
		case "{":
			t := i > 0 && (sigs[i-1].text == "extern" || (i > 1 && sigs[i-2].text == "namespace") || sigs[i-1].text == "namespace")
			transparent = append(transparent, t)
			if !t {
				depth++
			}
			continue
		case "}":
			if n := len(transparent); n > 0 {
				if !transparent[n-1] {
					depth--
				}
				transparent = transparent[:n-1]
			}
			continue
		}
		if depth != 0 || !isIdentStart(s.text[0]) || i+1 >= len(sigs) || sigs[i+1].text != "(" {
			continue
		}
		if cKeywords[s.text] || goKeywords[s.text] || cudaBuiltins[s.text] {
			continue
		}
		// Go methods: func (r T) name( — the receiver's '(' follows "func"; skip it.
		// Find the body: the first '{' at paren depth 0 before a ';'.
		pd := 0
		body := -1
		for j := i + 1; j < len(sigs); j++ {
			t := sigs[j].text
			if t == "(" {
				pd++
			} else if t == ")" {
				pd--
			} else if pd == 0 && t == ";" {
				break
			} else if pd == 0 && t == "{" {
				body = j
				break
			} else if pd == 0 && t == "}" {
				break
			}
		}
		if body < 0 {
			continue
		}
		if lang == "go" && i > 0 && sigs[i-1].text != "func" && sigs[i-1].text != ")" {
			continue
		}
		// The closing brace.
		d := 0
		end := len(src)
		for j := body; j < len(sigs); j++ {
			if sigs[j].text == "{" {
				d++
			} else if sigs[j].text == "}" {
				d--
				if d == 0 {
					end = sigs[j].pos + 1
					break
				}
			}
		}
		defined = append(defined, s.text)
		if s.text == name && !ok {
			found = span{first: lineOf(src, s.pos), last: lineOf(src, end-1)}
			found.first = declarationStart(src, found.first)
			ok = true
		}
		// Skip the body.
		for i+1 < len(sigs) && sigs[i+1].pos < end {
			i++
		}
	}
	return found, defined, ok
}

func lineOf(src string, pos int) int {
	if pos > len(src) {
		pos = len(src)
	}
	return strings.Count(src[:pos], "\n") + 1
}

// declarationStart moves from the line that names a function up over the rest of its
// declaration (template<...>, qualifiers on their own lines) and the comment above it.
func declarationStart(src string, line int) int {
	lines := strings.Split(src, "\n")
	i := line - 1 // 0-based
	// Declaration lines: non-blank, not comments, not ending a statement or block.
	for i > 0 {
		prev := strings.TrimSpace(lines[i-1])
		if prev == "" || strings.HasPrefix(prev, "//") || strings.HasPrefix(prev, "#") ||
			strings.HasSuffix(prev, ";") || strings.HasSuffix(prev, "}") || strings.HasSuffix(prev, "{") ||
			strings.HasSuffix(prev, "*/") {
			break
		}
		i--
	}
	// The comment right above.
	for i > 0 {
		prev := strings.TrimSpace(lines[i-1])
		if strings.HasPrefix(prev, "//") {
			i--
			continue
		}
		if strings.HasSuffix(prev, "*/") {
			j := i - 1
			for j >= 0 && !strings.Contains(lines[j], "/*") {
				j--
			}
			if j >= 0 {
				i = j
				continue
			}
		}
		break
	}
	return i + 1
}
