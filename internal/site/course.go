package site

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// chapter is one lab of the course as the site sees it.
type chapter struct {
	Name     string        // the folder's name, NN_name
	Num      string        // "01"
	Manifest *lab.Manifest // nil when the folder has no lab.yaml yet
	Title    map[string]string
	Summary  map[string]string
	Notes    map[string]string // lang → path of notes.LANG.md (only those that exist)
	Ready    bool              // manifest and both notes: the chapter has pages
	Results  []*devResults     // one per device with results, in device order
}

// devResults is one lab's results file on one device.
type devResults struct {
	Slug string
	File *results.File
}

// device is a device that has results in at least one lab.
type device struct {
	Slug     string
	Name     string
	Emulated bool
	Latest   *results.File // the most recent results file of the device
	Files    map[string]*devResults
}

type course struct {
	root     string
	chapters []*chapter
	devices  []*device
	bySlug   map[string]*device
	warnings []string
	errs     []error // fatal in any mode
	strictE  []error // fatal in strict mode
}

// loadCourse reads the chapters (planned ones, and every labs/NN_name folder), their manifests
// and notes, and every results file.
func loadCourse(root string) (*course, error) {
	c := &course{root: root, bySlug: map[string]*device{}}
	planned, err := plannedChapters()
	if err != nil {
		return nil, err
	}
	byName := map[string]*chapter{}
	add := func(name string) *chapter {
		if ch := byName[name]; ch != nil {
			return ch
		}
		ch := &chapter{Name: name, Num: name[:2], Title: map[string]string{}, Summary: map[string]string{},
			Notes: map[string]string{}}
		byName[name] = ch
		c.chapters = append(c.chapters, ch)
		return ch
	}
	for _, p := range planned {
		ch := add(p.Name)
		ch.Title["en"], ch.Title["zh"] = p.Title.EN, p.Title.ZH
		ch.Summary["en"], ch.Summary["zh"] = p.Summary.EN, p.Summary.ZH
	}
	entries, err := os.ReadDir(filepath.Join(root, "labs"))
	if err != nil {
		return nil, fmt.Errorf("reading the labs folder: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() && chapterRE.MatchString(e.Name()) {
			add(e.Name())
		}
	}
	sort.Slice(c.chapters, func(i, j int) bool { return c.chapters[i].Name < c.chapters[j].Name })

	isPlanned := map[string]bool{}
	for _, p := range planned {
		isPlanned[p.Name] = true
	}
	for _, ch := range c.chapters {
		dir := filepath.Join(root, "labs", ch.Name)
		if _, err := os.Stat(filepath.Join(dir, "lab.yaml")); err == nil {
			if isPlanned[ch.Name] {
				c.errs = append(c.errs, fmt.Errorf("site/theme/course.yaml: chapter %s has a lab.yaml, which gives its title and summary: remove it from course.yaml's chapters", ch.Name))
			}
			m, err := lab.LoadManifest(dir)
			if err != nil {
				c.errs = append(c.errs, err)
				continue
			}
			ch.Manifest = m
			for _, l := range Langs {
				if t := pick(l, m.Title); t != "" {
					ch.Title[l] = t
				}
				if s := pick(l, m.Summary); s != "" {
					ch.Summary[l] = s
				}
			}
		}
		for _, l := range Langs {
			if ch.Title[l] == "" {
				ch.Title[l] = strings.ReplaceAll(ch.Name[3:], "_", " ")
			}
			p := filepath.Join(dir, "notes."+l+".md")
			if _, err := os.Stat(p); err == nil {
				ch.Notes[l] = p
			}
		}
		switch {
		case len(ch.Notes) == 0:
		case ch.Manifest == nil:
			c.warn(true, "%s: has notes but no lab.yaml; listed as in preparation", c.rel(dir))
		case len(ch.Notes) < len(Langs):
			for _, l := range Langs {
				if ch.Notes[l] == "" {
					c.warn(true, "%s: notes.%s.md is missing (both languages are needed); listed as in preparation", c.rel(dir), l)
				}
			}
		default:
			ch.Ready = true
			c.checkProblemTitles(ch)
		}
	}
	if err := c.loadResults(); err != nil {
		return nil, err
	}
	return c, nil
}

// pick is a lab.yaml text in one language; Chinese loses the spaces that YAML's folding put
// between its lines.
func pick(lang string, t lab.Text) string {
	if lang == "zh" {
		return joinCJKText(t.ZH)
	}
	return t.EN
}

// warn records a warning; strict ones fail a strict build.
func (c *course) warn(strict bool, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.warnings = append(c.warnings, msg)
	if strict {
		c.strictE = append(c.strictE, errors.New(msg))
	}
}

// rel is a path relative to the course root, for messages.
func (c *course) rel(p string) string {
	if r, err := filepath.Rel(c.root, p); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return p
}

func (c *course) chapter(name string) *chapter {
	for _, ch := range c.chapters {
		if ch.Name == name {
			return ch
		}
	}
	return nil
}

// loadResults reads results/<device>/<lab>.json for every device folder.
func (c *course) loadResults() error {
	paths, err := filepath.Glob(filepath.Join(c.root, "results", "*", "*.json"))
	if err != nil {
		return err
	}
	sort.Strings(paths)
	for _, p := range paths {
		if strings.HasSuffix(p, ".profile.json") {
			continue // profiles (labrun profile) are read by the kl-profile cells
		}
		slug := filepath.Base(filepath.Dir(p))
		labName := strings.TrimSuffix(filepath.Base(p), ".json")
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := results.Parse(p, data)
		if err != nil {
			c.warn(true, "%s: skipped: %v", c.rel(p), err)
			continue
		}
		dr := &devResults{Slug: slug, File: f}
		d := c.bySlug[slug]
		if d == nil {
			d = &device{Slug: slug, Files: map[string]*devResults{}}
			c.bySlug[slug] = d
			c.devices = append(c.devices, d)
		}
		d.Files[labName] = dr
		if d.Latest == nil || f.Time.After(d.Latest.Time) {
			d.Latest = f
		}
		if f.Device.Emulated || slug == "emulator" {
			d.Emulated = true
		}
		if ch := c.chapter(labName); ch != nil {
			ch.Results = append(ch.Results, dr)
		} else {
			c.warn(false, "%s: no lab %s in labs/; its results are shown on the device page only", c.rel(p), labName)
		}
	}
	for _, d := range c.devices {
		d.Name = d.Latest.Device.Name
		if d.Name == "" {
			d.Name = d.Slug
		}
	}
	// Real devices first, then emulated ones; by name within each.
	sort.SliceStable(c.devices, func(i, j int) bool {
		a, b := c.devices[i], c.devices[j]
		if a.Emulated != b.Emulated {
			return !a.Emulated
		}
		return a.Slug < b.Slug
	})
	order := map[string]int{}
	for i, d := range c.devices {
		order[d.Slug] = i
	}
	for _, ch := range c.chapters {
		sort.SliceStable(ch.Results, func(i, j int) bool { return order[ch.Results[i].Slug] < order[ch.Results[j].Slug] })
	}
	return nil
}

// extraFor finds a device's lab-specific data under key: in the named lab's results first, then
// in any lab's (a lab that measures the device records them for all).
func (c *course) extraFor(slug, preferLab, key string) (any, *devResults) {
	d := c.bySlug[slug]
	if d == nil {
		return nil, nil
	}
	if dr := d.Files[preferLab]; dr != nil {
		if v, ok := dr.File.Extra[key]; ok {
			return v, dr
		}
	}
	names := make([]string, 0, len(d.Files))
	for n := range d.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if v, ok := d.Files[n].File.Extra[key]; ok {
			return v, d.Files[n]
		}
	}
	return nil, nil
}

// fileExists reports whether p is a regular file.
func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
