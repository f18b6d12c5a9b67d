package site

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHighlight(t *testing.T) {
	tests := []struct {
		lang, src string
		want      []string
	}{
		{"cuda", "#include \"kl.cuh\"\n__global__ void k(float4* x) { x[threadIdx.x] = 1.5f; __syncthreads(); } // done",
			[]string{`<span class="hl-p">#include</span> <span class="hl-p">&#34;kl.cuh&#34;</span>`, `<span class="hl-t">float4</span>`, `<span class="hl-b">__syncthreads</span>`, `<span class="hl-k">__global__</span>`,
				`<span class="hl-t">void</span>`, `<span class="hl-b">threadIdx</span>`, `<span class="hl-n">1.5f</span>`, `<span class="hl-c">// done</span>`}},
		{"cuda", "/* a\nb */ int x = 0x1F; char c = '\"';",
			[]string{`<span class="hl-c">/* a</span>` + "\n" + `<span class="hl-c">b */</span>`, `<span class="hl-n">0x1F</span>`, `<span class="hl-s">&#39;&#34;&#39;</span>`}},
		{"go", "func f() error { s := `raw \"x\"`; return nil } // c",
			[]string{`<span class="hl-k">func</span>`, `<span class="hl-t">error</span>`, "<span class=\"hl-s\">`raw &#34;x&#34;`</span>", `<span class="hl-k">nil</span>`}},
		{"sh", "make run LAB=01   # run it\nbin/labrun 01 --quick \"$HOME\"\ncd x && export A=1",
			[]string{`<span class="hl-c"># run it</span>`, `<span class="hl-b">$HOME</span>`, `<span class="hl-s">&#34;</span>`,
				`<span class="hl-b">cd</span>`, `<span class="hl-b">export</span>`}},
		{"yaml", "suite: hbm  # c\nproblems: [\"1 GiB\"]\nn: 12",
			[]string{`<span class="hl-k">suite</span>`, `<span class="hl-c"># c</span>`, `<span class="hl-s">&#34;1 GiB&#34;</span>`, `<span class="hl-n">12</span>`}},
		{"json", `{"a": [1.5, true, null, "x"]}`,
			[]string{`<span class="hl-k">&#34;a&#34;</span>`, `<span class="hl-n">1.5</span>`, `<span class="hl-k">true</span>`, `<span class="hl-s">&#34;x&#34;</span>`}},
		{"make", "kernels: $(SRC) # build\n\tnvcc -o $@ $<",
			[]string{`<span class="hl-c"># build</span>`}},
		{"", "<b>&</b>", []string{"&lt;b&gt;&amp;&lt;/b&gt;"}},
	}
	for _, tc := range tests {
		h, err := highlight(tc.lang, tc.src, 0)
		require.NoError(t, err)
		got := string(h)
		for _, w := range tc.want {
			assert.Contains(t, got, w, "%s: %q", tc.lang, tc.src)
		}
		// Highlighting never changes the text.
		plain := strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&", "&#34;", `"`, "&#39;", "'").Replace(tagRE.ReplaceAllString(got, ""))
		assert.Equal(t, tc.src, plain)
	}
}

func TestHighlightNumbered(t *testing.T) {
	h, err := highlight("cuda", "/* a\nb */\nint x;", 7)
	require.NoError(t, err)
	assert.Equal(t, 3, strings.Count(string(h), `<span class="line">`), "one line span per line, comments split at line ends")
	block, err := execTemplate("codeblock", codeBlock("cuda", "int x;", 7))
	require.NoError(t, err)
	assert.Contains(t, string(block), `style="counter-reset:ln 6"`)
}

func TestFindFunction(t *testing.T) {
	src := `#include "kl.cuh"

// helper: not a kernel.
template <typename T>
__device__ inline T twice(T x) { return x + x; }

int declared_only(int);

extern "C" {

/* The kernel.
   Two lines of comment. */
__global__ void __launch_bounds__(256)
kern(float* out) {
    if (threadIdx.x == 0) { out[0] = twice(1.0f); }
    const char* s = "}"; // a brace in a string
}

}  // extern "C"

namespace detail {
void inner() {}
}
`
	tests := []struct {
		name        string
		first, last int
	}{
		{"twice", 3, 5},
		{"kern", 11, 17},
		{"inner", 22, 22},
	}
	for _, tc := range tests {
		sp, defined, ok := findFunction("cuda", src, tc.name)
		assert.True(t, ok, tc.name)
		assert.Equal(t, span{tc.first, tc.last}, sp, tc.name)
		assert.Equal(t, []string{"twice", "kern", "inner"}, defined)
	}
	_, _, ok := findFunction("cuda", src, "declared_only")
	assert.False(t, ok, "a declaration is not a definition")

	goSrc := "package x\n\nvar v = f()\n\n// M does it.\nfunc (r *T) M(a int) error {\n\treturn nil\n}\n\nfunc f() int { return 1 }\n"
	sp, defined, ok := findFunction("go", goSrc, "M")
	assert.True(t, ok)
	assert.Equal(t, span{5, 8}, sp)
	assert.Equal(t, []string{"M", "f"}, defined)
}

var tagRE = regexp.MustCompile(`<[^>]+>`)
