package site

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/results"
)

func TestGlossaryIsFollowed(t *testing.T) {
	root := fixture(t)
	writeFile(t, root, GlossaryPath, `terms:
  - en: warp
    zh: warp
    avoid: ["线程束"]
  - en: lab NN
    zh: 实验 NN
    avoid: ["第 ?\\d+ ?章"]
`)
	notes := read(t, root, notesPath("02_gemm", "zh")) + "\n一个线程束有 32 个线程，见第 01 章。代码里的 `线程束` 和\n\n```c\n// 线程束\n```\n"
	writeFile(t, root, notesPath("02_gemm", "zh"), notes)
	lineOf := func(sub string) int {
		return strings.Count(notes[:strings.Index(notes, sub)], "\n") + 1
	}

	_, _, err := build(t, root, true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "labs/02_gemm/notes.zh.md:"+itoa(lineOf("一个线程束"))+`: "线程束": the glossary (labs/glossary.yaml) says warp for warp`)
	assert.Contains(t, err.Error(), `"第 01 章"`)
	assert.NotContains(t, err.Error(), ":"+itoa(lineOf("// 线程束"))+":", "code is not checked")

	rep, _, err := build(t, root, false)
	require.NoError(t, err, "without --strict it is a warning")
	assert.NotEmpty(t, rep.Warnings)
}

func TestGlossaryFileIsStrict(t *testing.T) {
	root := fixture(t)
	writeFile(t, root, GlossaryPath, "terms:\n  - en: warp\n    zh: warp\n    avoud: [线程束]\n")
	_, err := loadGlossary(root)
	assert.ErrorContains(t, err, `labs/glossary.yaml:4: unknown key "avoud" in terms[0]`)
}

func TestRealCourseFollowsItsGlossary(t *testing.T) {
	root := realCourse(t)
	terms, err := loadGlossary(root)
	require.NoError(t, err)
	require.NotEmpty(t, terms, "the course has a glossary (%s)", GlossaryPath)
	found, err := checkGlossary(root, terms)
	require.NoError(t, err)
	for _, f := range found {
		t.Error(f)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestRuntimeTextCoversRecordedMessages: every reason for a skip that the course's results files
// record reads in Chinese on the Chinese pages, and each rule of runtimeRules is still needed
// or matches a message internal/lab writes.
func TestRuntimeTextCoversRecordedMessages(t *testing.T) {
	c, err := loadCourse(realCourse(t))
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, d := range c.devices {
		for _, dr := range d.Files {
			for _, e := range dr.File.Entries {
				if e.Status != "skipped" || seen[e.Error] {
					continue
				}
				seen[e.Error] = true
				zh := runtimeText("zh", e.Error)
				assert.NotEqual(t, e.Error, zh, "no Chinese for %q", e.Error)
				assert.NotRegexp(t, `[a-z]+ [a-z]+ [a-z]+`, zh, "English left in %q", zh)
			}
		}
	}
	// What lab 01 records of its ceilings and of a device without NVML reads in Chinese too.
	for _, d := range c.devices {
		for _, dr := range d.Files {
			for _, ce := range results.CeilingsIn(dr.File.Extra) {
				for _, msg := range []string{ce.Note, ce.Source} {
					if msg != "" {
						assert.NotRegexp(t, `[a-z]+ [a-z]+ [a-z]+`, runtimeText("zh", msg), "English left in %q", msg)
					}
				}
			}
			if nv, ok := dr.File.Extra["nvml"].(map[string]any); ok {
				if r, ok := nv["reason"].(string); ok {
					assert.NotEqual(t, r, runtimeText("zh", r), "no Chinese for %q", r)
				}
			}
		}
	}
	assert.Equal(t, "需要 cuBLAS，它只在 NVIDIA GPU 上提供", runtimeText("zh", "needs cuBLAS, which exists on NVIDIA GPUs only"))
	assert.Equal(t, "模拟器上不运行：内联 PTX（cp.async、ldmatrix、mma.sync）只能在 NVIDIA GPU 上运行",
		runtimeText("zh", "not on the emulator: inline PTX (cp.async, ldmatrix, mma.sync) runs on NVIDIA GPUs only"))
	assert.Equal(t, "needs cuBLAS, which exists on NVIDIA GPUs only", runtimeText("en", "needs cuBLAS, which exists on NVIDIA GPUs only"))
}
