package lab

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// buildItem is one compile: a kernel file with its flags and target, and the entries (variants
// and helpers) that use the image.
type buildItem struct {
	file     string
	arch     string
	flags    []string
	entries  []string
	variants []*Variant // variants that fail when the file does not compile
}

// build compiles every kernel file the run needs, once per file, flags and target, in parallel.
// It returns the images by "file:entry" and failed entries for variants whose kernel did not
// compile.
func (r *runner) build(ctx context.Context) (map[string]string, []results.Entry, results.Toolchain) {
	byKey := map[string]*buildItem{}
	var items []*buildItem
	add := func(file, entry string, needs, flags []string, v *Variant) {
		arch := r.archFor(needs)
		key := file + "|" + arch + "|" + strings.Join(flags, " ")
		it, ok := byKey[key]
		if !ok {
			it = &buildItem{file: file, arch: arch, flags: flags}
			byKey[key] = it
			items = append(items, it)
		}
		it.entries = append(it.entries, entry)
		if v != nil {
			it.variants = append(it.variants, v)
		}
	}
	for _, s := range r.man.Suites {
		for _, v := range s.Variants {
			if v.IsKernel() && r.selected(v) && r.skipReason(v.Needs, v.EmuSkip) == "" {
				add(v.File, v.Entry, v.Needs, v.Flags, v)
			}
		}
	}
	for _, h := range r.man.Helpers {
		if r.skipReason(nil, h.EmuSkip) == "" {
			add(h.File, h.Entry, nil, nil, nil)
		}
	}
	// The backend compiles, with the flags its rules give every kernel built for this device.
	compiler, deviceFlags := r.backend().Compiler, r.backend().Rules.BuildFlags(r.info)
	tc := results.Toolchain{Compiler: compiler.Family(), Arch: r.archFor(nil)}
	images := map[string]string{}
	var failed []results.Entry
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	graded := r.gradedFiles()
	started := time.Now()
	if len(items) > 0 {
		// A first build of a lab takes seconds per file; say what is happening meanwhile.
		fmt.Fprintf(r.o.Progress, "building %d kernel file(s) for %s (compiled once, then cached)…\n", len(items), tc.Arch)
	}
	done, cached := 0, 0
	for _, it := range items {
		wg.Add(1)
		go func(it *buildItem) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			req := toolchain.Request{
				Source:      filepath.Join(r.man.Dir, it.file),
				IncludeDirs: []string{filepath.Join(r.o.Root, "labs", "common"), r.man.Dir},
				Arch:        it.arch,
				Flags:       append(append([]string{}, it.flags...), deviceFlags...),
			}
			if sub, ok := r.o.Files[it.file]; ok {
				// A submission is built hermetically: alone, with only the shared headers
				// (labs/common) and the emulator's to include, never the lab's own folders.
				req.Source = sub
				req.IncludeDirs = []string{filepath.Join(r.o.Root, "labs", "common")}
				req.Submission = r.o.Submission
				if req.Submission == nil {
					req.Submission = &toolchain.Submission{Protect: []string{r.o.Root}}
				}
			}
			art, err := compiler.Build(ctx, req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fmt.Fprintf(r.o.Progress, "build %s: %v\n", it.file, err)
				for _, v := range it.variants {
					failed = append(failed, r.failAll(v, "compile: "+err.Error())...)
					r.compileErr[v] = "compile: " + err.Error()
				}
				return
			}
			for _, e := range it.entries {
				images[imageKey(it.file, e, it.flags)] = art.Path
			}
			if graded[it.file] {
				if r.untrusted == nil {
					r.untrusted = map[string]bool{}
				}
				r.untrusted[art.Path] = true
			}
			done++
			if art.Cached {
				cached++
			} else {
				fmt.Fprintf(r.o.Progress, "  [%d/%d] compiled %s (%.1fs)\n", done, len(items),
					strings.TrimSpace(it.file+" "+strings.Join(it.flags, " ")), time.Since(started).Seconds())
			}
		}(it)
	}
	wg.Wait()
	if len(items) > 0 {
		from := ""
		if cached > 0 {
			from = fmt.Sprintf(" (%d from the cache)", cached)
		}
		fmt.Fprintf(r.o.Progress, "built %d kernel file(s) in %.1fs%s\n", len(items), time.Since(started).Seconds(), from)
	}
	if v, err := compiler.Version(); err == nil {
		tc.Version = v
	}
	return images, failed, tc
}
