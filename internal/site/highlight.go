package site

import (
	"html/template"
	"path/filepath"
	"strings"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"
)

// Syntax highlighting for the languages the course shows (CUDA/C++, Go, shell, YAML, JSON,
// Makefiles): chroma's lexers split the text into tokens, and the site writes each token with
// one of its own classes (hl-k, hl-t, ... in style.css), so that the look is the stylesheet's.
// Chroma has no CUDA lexer: CUDA is its C++ lexer with CUDA's words on top (cudaWords).

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

// cudaWords are what CUDA adds to C++ (and the course's own macros from kl.cuh), which chroma's
// C++ lexer reads as plain names.
var cudaWords = func() map[string]byte {
	m := map[string]byte{}
	add := func(class byte, words string) {
		for _, w := range strings.Fields(words) {
			m[w] = class
		}
	}
	add(tkKeyword, `__global__ __device__ __host__ __shared__ __constant__ __managed__ __forceinline__
		__noinline__ __launch_bounds__ __grid_constant__ __restrict__ KL_LAUNCH_BOUNDS`)
	add(tkType, `size_t ptrdiff_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t
		uintptr_t half __half __half2 __nv_bfloat16 __nv_bfloat162 float2 float3 float4 int2 int3
		int4 uint2 uint3 uint4 double2 longlong2 longlong4 ulonglong2 char4 uchar4 dim3 cudaStream_t`)
	add(tkBuiltin, `threadIdx blockIdx blockDim gridDim warpSize __syncthreads __syncwarp
		__shfl_sync __shfl_up_sync __shfl_down_sync __shfl_xor_sync __ballot_sync __any_sync
		__all_sync __activemask __threadfence __threadfence_block __threadfence_system atomicAdd
		atomicSub atomicMax atomicMin atomicExch atomicCAS atomicAnd atomicOr atomicXor __ldg
		__fmaf_rn __fmul_rn __fadd_rn __float2half __half2float __float2bfloat16 __bfloat162float
		make_float2 make_float4 make_int2 make_int4 __popc __clz __ffs __brev __expf __logf __sinf
		__cosf rsqrtf sqrtf fmaf expf logf fabsf fminf fmaxf __trap clock64 printf nvcuda wmma
		__cvta_generic_to_shared KL_WARP_SIZE`)
	return m
}()

// lexerNames maps the site's languages to chroma's lexers.
var lexerNames = map[string]string{"cuda": "cpp", "go": "go", "sh": "bash", "yaml": "yaml", "json": "json", "make": "makefile"}

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
	case "make", "makefile", "mk":
		return "make"
	}
	return ""
}

// langOfFile picks the language from a file name.
func langOfFile(name string) string {
	if filepath.Base(name) == "Makefile" {
		return "make"
	}
	return langOf(filepath.Ext(name))
}

// classOf is the site's class for one of chroma's token types.
func classOf(t chroma.TokenType) byte {
	switch {
	case t == chroma.CommentPreproc || t == chroma.CommentPreprocFile:
		return tkPreproc
	case t.InCategory(chroma.Comment):
		return tkComment
	case t == chroma.KeywordType:
		return tkType
	case t.InCategory(chroma.Keyword), t == chroma.NameTag: // a YAML or JSON key reads as a keyword
		return tkKeyword
	case t == chroma.NameBuiltin || t == chroma.NameBuiltinPseudo || t == chroma.NameVariable:
		return tkBuiltin
	case t.InSubCategory(chroma.LiteralString):
		return tkString
	case t.InSubCategory(chroma.LiteralNumber):
		return tkNumber
	}
	return tkPlain
}

// tokenize splits src into classified tokens. Every byte of src is in exactly one token.
func tokenize(lang, src string) []token {
	name, ok := lexerNames[lang]
	if !ok || src == "" {
		return []token{{tkPlain, src, 0}}
	}
	it, err := lexers.Get(name).Tokenise(&chroma.TokeniseOptions{State: "root"}, src)
	if err != nil {
		return []token{{tkPlain, src, 0}}
	}
	var out []token
	pos := 0
	for t := it(); t != chroma.EOF && pos < len(src); t = it() {
		text := t.Value
		if pos+len(text) > len(src) {
			text = src[pos:] // the lexer may add a final newline
		}
		class := classOf(t.Type)
		if lang == "cuda" && class == tkPlain {
			if c, ok := cudaWords[text]; ok {
				class = c
			}
		}
		if n := len(out); n > 0 && out[n-1].class == class {
			out[n-1].text += text
		} else {
			out = append(out, token{class, text, pos})
		}
		pos += len(text)
	}
	if pos < len(src) {
		out = append(out, token{tkPlain, src[pos:], pos})
	}
	return out
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdent(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

var _ = defineTemplates(`
{{- define "codeblock"}}<pre class="code{{if .Numbered}} numbered{{end}}"><code{{with .Lang}} class="language-{{.}}"{{end}}
{{- if .Numbered}} style="counter-reset:ln {{.Reset}}"{{end}}>{{template "codelines" .}}</code></pre>{{end}}
{{- define "codelines"}}{{range $i, $l := .Lines}}{{if $i}}{{"\n"}}{{end}}{{if $.Numbered}}<span class="line">{{end}}
{{- range $l}}{{if .Class}}<span class="hl-{{.Class}}">{{.Text}}</span>{{else}}{{.Text}}{{end}}{{end}}
{{- if $.Numbered}}</span>{{end}}{{end}}{{end}}`)

// codeView is a highlighted listing (the "codeblock" template): its lines, each a list of
// spans of one class. Numbered listings count their lines from Reset+1 in CSS.
type codeView struct {
	Lang     string
	Numbered bool
	Reset    int
	Lines    [][]hlSpan
}

type hlSpan struct {
	Class string // "k", "t", ... (CSS class hl-X); "" for plain text
	Text  string
}

// codeBlock lays out src highlighted; with firstLine > 0 its lines are numbered from firstLine.
func codeBlock(lang, src string, firstLine int) codeView {
	src = strings.TrimRight(src, "\n")
	v := codeView{Lang: lang, Numbered: firstLine > 0, Reset: firstLine - 1}
	line := []hlSpan{}
	for _, t := range tokenize(lang, src) {
		class := ""
		if t.class != tkPlain {
			class = string(t.class)
		}
		for i, p := range strings.Split(t.text, "\n") {
			if i > 0 {
				v.Lines = append(v.Lines, line)
				line = []hlSpan{}
			}
			if p != "" {
				line = append(line, hlSpan{class, p})
			}
		}
	}
	v.Lines = append(v.Lines, line)
	return v
}

// highlight is the highlighted lines of src, without the listing around them.
func highlight(lang, src string, firstLine int) (template.HTML, error) {
	return execTemplate("codelines", codeBlock(lang, src, firstLine))
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
		word bool // a keyword, type or built-in: never a function's name
	}
	var sigs []sig
	for _, t := range toks {
		switch t.class {
		case tkComment, tkString, tkPreproc:
			continue
		}
		s := t.text
		word := t.class == tkKeyword || t.class == tkType || t.class == tkBuiltin
		for i := 0; i < len(s); {
			c := s[i]
			switch {
			case isIdentStart(c):
				j := i + 1
				for j < len(s) && isIdent(s[j]) {
					j++
				}
				sigs = append(sigs, sig{s[i:j], t.pos + i, word})
				i = j
			case c == '{' || c == '}' || c == '(' || c == ')' || c == ';':
				sigs = append(sigs, sig{s[i : i+1], t.pos + i, false})
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
		if s.word {
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
