package toolchain

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestScanIncludes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		src   string
		lines []int // lines refused
	}{
		{"shared and system headers", "#include \"kl.cuh\"\n#include <stdint.h>\n#include \"gemm_common.cuh\"\n", nil},
		{"absolute", "#include \"kl.cuh\"\n#include \"/course/labs/02_gemm/exercises/ex1_smem_tiling.cu\"\n", []int{2}},
		{"dot dot", "#  include \"../exercises/ex1.cu\"\n", []int{1}},
		{"dot dot inside", "#include <foo/../../etc/passwd>\n", []int{1}},
		{"include_next and import", "#include_next \"/x.h\"\n#import \"../y.h\"\n", []int{1, 2}},
		{"has_include", "#if __has_include(\"../kernels/03.cu\")\n#endif\n", []int{1}},
		{"pragma dependency", "#pragma GCC dependency \"/etc/passwd\"\n", []int{1}},
		{"continued line", "#include \\\n  \"/abs.cu\"\n", []int{1}},
		{"comment between", "# /* x */ include \"../a.cu\"\n", []int{1}},
		{"commented out", "// #include \"/abs.cu\"\n/* #include \"../b.cu\"\n*/\n", nil},
		{"in a string", "const char* s = \"#include \\\"/abs.cu\\\"\";\n", nil},
		{"macro include (the sandbox's and the audit's job)", "#define P \"/abs.cu\"\n#include P\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := ScanIncludes("sub.cu", []byte(tc.src))
			var lines []int
			for _, d := range ds {
				lines = append(lines, d.Line)
				assert.Equal(t, "sub.cu", d.File)
				assert.Contains(t, d.Message, "a submission may include only")
			}
			assert.Equal(t, tc.lines, lines)
		})
	}
}

func TestParseDeps(t *testing.T) {
	got := parseDeps([]byte("x.o: /a/k.cu /a/kl.cuh \\\n /usr/include/c++/12/new \\\n /a/with\\ space.h\n/a/kl.cuh:\n"))
	assert.Equal(t, []string{"/a/k.cu", "/a/kl.cuh", "/usr/include/c++/12/new", "/a/with space.h"}, got)
}
