package toolchain

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// The build cache. A build's key (Key) covers what is known before compiling: the compiler's
// version, the flags, the include folders and the source's content. What the source includes is
// known only after: the compiler lists every file it read (-MD -MF), and the cache keeps that
// list, with each file's hash, in an index beside the object (<base>-<key>.deps.json). A lookup
// re-hashes every file of the list and rebuilds when any changed, so an edited header or an
// edited included .cu file is never served from a stale object. Objects are named by the hash of
// their dependency list too, so an object file never changes once written: a process that found
// one by an index loads what that index described.

// depIndex is the cache's record of one build.
type depIndex struct {
	Object string    `json:"object"` // the object's file name, in the same folder
	Deps   []depFile `json:"deps"`
}

type depFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

func fileSHA(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// cachedObject returns the object an index describes when every file it depends on is
// unchanged.
func cachedObject(index string) (string, bool) {
	b, err := os.ReadFile(index)
	if err != nil {
		return "", false
	}
	var ix depIndex
	if json.Unmarshal(b, &ix) != nil || ix.Object == "" || filepath.Base(ix.Object) != ix.Object {
		return "", false
	}
	for _, d := range ix.Deps {
		if h, err := fileSHA(d.Path); err != nil || h != d.SHA256 {
			return "", false
		}
	}
	obj := filepath.Join(filepath.Dir(index), ix.Object)
	if _, err := os.Stat(obj); err != nil {
		return "", false
	}
	return obj, true
}

// depPath is a dependency the compiler listed, made absolute against its working folder.
func depPath(dep, workDir string) string {
	if !filepath.IsAbs(dep) {
		dep = filepath.Join(workDir, dep)
	}
	return filepath.Clean(dep)
}

// hashDeps hashes the files a build read (absolute paths, files in skip left out: the build's
// own scratch folder) into the index's list, sorted, and returns it with a short hash of the
// whole list.
func hashDeps(deps []string, workDir string, skip []string) ([]depFile, string, error) {
	seen := map[string]bool{}
	var out []depFile
	for _, d := range deps {
		p := depPath(d, workDir)
		if seen[p] {
			continue
		}
		seen[p] = true
		left := false
		for _, s := range skip {
			if within(p, filepath.Clean(s)) {
				left = true
			}
		}
		if left {
			continue
		}
		h, err := fileSHA(p)
		if err != nil {
			return nil, "", fmt.Errorf("hashing %s, which the compiler read: %w", p, err)
		}
		out = append(out, depFile{Path: p, SHA256: h})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	h := sha256.New()
	for _, d := range out {
		fmt.Fprintf(h, "%s %s\n", d.Path, d.SHA256)
	}
	return out, hex.EncodeToString(h.Sum(nil))[:16], nil
}

// writeIndex writes an index atomically (temporary file + rename).
func writeIndex(index, object string, deps []depFile) error {
	b, err := json.MarshalIndent(depIndex{Object: filepath.Base(object), Deps: deps}, "", " ")
	if err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", index, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, index); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
