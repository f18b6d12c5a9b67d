package solution

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStrip holds every case of the stripping that the student edition (grade.StripSolutions)
// relies on.
func TestStrip(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		n              int
	}{
		{"c++ region", "a\n    // BEGIN SOLUTION\n    x = 1;\n    y = 2;\n    // END SOLUTION\nb\n",
			"a\n    // TODO: your code here (see the instructions above).\nb\n", 1},
		{"stub lines", "int f() {\n  // BEGIN SOLUTION\n  return 42;\n  // STUB: return 0;\n  // END SOLUTION\n}\n",
			"int f() {\n  // TODO: your code here (see the instructions above).\n  return 0;\n}\n", 1},
		{"markdown", "x\n<!-- BEGIN SOLUTION -->\nthe answer\n<!-- END SOLUTION -->\n",
			"x\n<!-- TODO: your code here (see the instructions above). -->\n", 1},
		{"python style and two regions", "# BEGIN SOLUTION\nA\n# END SOLUTION\nk\n# BEGIN SOLUTION\nB\n# END SOLUTION\n",
			"# TODO: your code here (see the instructions above).\nk\n# TODO: your code here (see the instructions above).\n", 2},
		{"prose that mentions the markers is kept", "Regions are marked `// BEGIN SOLUTION` and `// END SOLUTION`.\n",
			"Regions are marked `// BEGIN SOLUTION` and `// END SOLUTION`.\n", 0},
		{"crlf", "a\r\n// BEGIN SOLUTION\r\nx\r\n// END SOLUTION\r\n", "a\r\n// TODO: your code here (see the instructions above).\r\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, n, err := Strip("f", []byte(tc.in))
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(out))
			assert.Equal(t, tc.n, n)
			assert.False(t, HasBegin(out), "no marker is left")
		})
	}
	for _, bad := range []struct{ in, want string }{
		{"x\n// BEGIN SOLUTION\ny\n", "f:2: BEGIN SOLUTION is never closed by END SOLUTION"},
		{"// END SOLUTION\n", "f:1: END SOLUTION without BEGIN SOLUTION"},
		{"// BEGIN SOLUTION\n// BEGIN SOLUTION\n// END SOLUTION\n", "f:2: BEGIN SOLUTION inside the region opened at line 1"},
	} {
		_, _, err := Strip("f", []byte(bad.in))
		assert.EqualError(t, err, bad.want)
	}
}

// exercise is an exercise file; its markers are built from the constants so that this file has
// no marker line of its own (the export would strip it, and the leak check would read it).
var exercise = `extern "C" __global__ void k(const float* a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // ` + Begin + `
    if (i >= n) return;
    float acc = a[i] * 2.0f;   // the heart of it

    acc += a[(i + 1) % n];
    }
    }
    }
    out[i] = acc;
    // STUB: out[i] = 0.0f;
    // ` + End + `
}
`

// Leaks finds a region's code however it is indented, interleaved with comments or rendered as
// highlighted HTML, and not the stub, nor three lines of braces.
func TestLeaks(t *testing.T) {
	regions, err := Regions("labs/x/ex.cu", []byte(exercise))
	require.NoError(t, err)
	require.Len(t, regions, 1)
	stub, _, err := Strip("ex.cu", []byte(exercise))
	require.NoError(t, err)

	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	write("stub/ex.cu", string(stub))
	write("braces.cu", "}\n}\n}\n}\n")
	write("other.cu", "if (i >= n) return;\nfloat acc = 0;\n")
	// Two idioms of the course and one line of the solution are not a leak.
	write("idioms.cu", "float acc = a[i] * 2.0f;\nacc += a[(i + 1) % n];\n}\nout[i] = acc;\n")
	write("copy/kernel.cu", "void f() {\n\tif (i >= n)   return;\n\t// a comment in between\n\n\tfloat acc = a[i] * 2.0f;\n\tacc += a[(i + 1) % n];\n}\n")
	write("page.html", `<pre><code><span class="line"><span class="hl-k">if</span> (i &gt;= n) return;</span>
<span class="line">float acc = a[i] * 2.0f;   <span class="hl-c">// the heart of it</span></span>
<span class="line">acc += a[(i + 1) % n];</span></code></pre>`)
	write("bin.dat", "\x00if (i >= n) return;\nfloat acc = a[i] * 2.0f;\nacc += a[(i + 1) % n];\n")

	leaks, err := Leaks(regions, map[string]bool{"acc += a[(i + 1) % n];": true}, dir)
	require.NoError(t, err)
	var files []string
	for _, l := range leaks {
		files = append(files, l.File)
		assert.Equal(t, "labs/x/ex.cu:3", l.Region)
	}
	assert.Equal(t, []string{"copy/kernel.cu", "page.html"}, files)
	assert.Equal(t, 2, leaks[0].Line)
	assert.Contains(t, leaks[0].String(), "copy/kernel.cu:2 holds the solution of labs/x/ex.cu:3")
}
