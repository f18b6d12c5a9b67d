package site

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

var (
	refRE = regexp.MustCompile(`(?is)<(a|link|img|script|source|iframe|object|embed|image|use)\b[^>]*?\s(href|src|data|xlink:href)\s*=\s*"([^"]*)"`)
	idRE  = regexp.MustCompile(`\sid="([^"]*)"`)
)

// CheckSite checks a built site the way a reader's browser would find it: every link and image
// points at a file of the site (and an anchor that exists), no page loads anything from the
// network, no link is absolute (the site must work from file:// and from any sub-path), every
// page has its counterpart in the other language, and every SVG is well-formed. The site's tests
// run it on every site they build.
func CheckSite(dir string) error {
	var errs []error
	pages := map[string][]byte{}
	var svgs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case strings.HasSuffix(p, ".html"):
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			pages[rel] = data
		case strings.HasSuffix(p, ".svg"):
			svgs = append(svgs, rel)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(pages) == 0 {
		return fmt.Errorf("%s holds no HTML pages", dir)
	}
	ids := map[string]map[string]bool{}
	idsOf := func(rel string) map[string]bool {
		if m, ok := ids[rel]; ok {
			return m
		}
		m := map[string]bool{}
		for _, id := range idRE.FindAllSubmatch(pages[rel], -1) {
			m[html.UnescapeString(string(id[1]))] = true
		}
		ids[rel] = m
		return m
	}
	names := make([]string, 0, len(pages))
	for rel := range pages {
		names = append(names, rel)
	}
	sort.Strings(names)
	for _, rel := range names {
		for _, m := range refRE.FindAllSubmatch(pages[rel], -1) {
			tag := strings.ToLower(string(m[1]))
			ref := html.UnescapeString(string(m[3]))
			if err := checkRef(dir, rel, tag, ref, pages, idsOf); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", rel, err))
			}
		}
		if strings.HasPrefix(rel, "en/") || strings.HasPrefix(rel, "zh/") {
			other := otherLang(rel[:2]) + rel[2:]
			if _, ok := pages[other]; !ok {
				errs = append(errs, fmt.Errorf("%s: no page %s in the other language", rel, other))
			}
		}
	}
	for _, rel := range svgs {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := wellFormed(data); err != nil {
			errs = append(errs, fmt.Errorf("%s: not a well-formed SVG: %v", rel, err))
		}
	}
	return joinErrs(errs)
}

func checkRef(dir, page, tag, ref string, pages map[string][]byte, idsOf func(string) map[string]bool) error {
	if ref == "" {
		return fmt.Errorf("<%s> with an empty link", tag)
	}
	if strings.HasPrefix(ref, "data:") {
		return nil
	}
	u, err := url.Parse(ref)
	if err != nil {
		return fmt.Errorf("bad link %q: %v", ref, err)
	}
	if u.Scheme != "" || strings.HasPrefix(ref, "//") {
		if tag == "a" && (u.Scheme == "http" || u.Scheme == "https" || u.Scheme == "mailto") {
			return nil // a link the reader may follow; nothing is loaded from it
		}
		return fmt.Errorf("<%s> loads %q from outside the site: the site must be self-contained", tag, ref)
	}
	if strings.HasPrefix(u.Path, "/") {
		return fmt.Errorf("link %q is absolute: it breaks the site under a sub-path and from file://", ref)
	}
	target := page
	if u.Path != "" {
		target = path.Clean(path.Join(path.Dir(page), u.Path))
		if target == ".." || strings.HasPrefix(target, "../") {
			return fmt.Errorf("link %q leaves the site", ref)
		}
		st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(target)))
		if err != nil {
			return fmt.Errorf("broken link %q: %s does not exist", ref, target)
		}
		if st.IsDir() {
			return fmt.Errorf("link %q names a folder: from file:// a folder shows no index.html; link the file", ref)
		}
	}
	if u.Fragment != "" {
		if _, isPage := pages[target]; !isPage {
			return nil
		}
		if !idsOf(target)[u.Fragment] {
			return fmt.Errorf("link %q: %s has no element with id %q", ref, target, u.Fragment)
		}
	}
	return nil
}

func wellFormed(data []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	sawSVG := false
	for {
		t, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if se, ok := t.(xml.StartElement); ok && se.Name.Local == "svg" {
			sawSVG = true
		}
	}
	if !sawSVG {
		return errors.New("no <svg> element")
	}
	return nil
}
