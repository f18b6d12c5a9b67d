package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

func cmdList(fs *flags, args []string, stdout, stderr io.Writer) int {
	asJSON := fs.Bool("json", false, "write JSON to stdout")
	fs.intro = "Usage: labrun list [--json]\n\nLists the labs with their suites and variants.\n\nFlags:\n"
	if code, ok := fs.parse(args); !ok {
		return code
	}
	root, code := findRoot(stderr)
	if code != exitOK {
		return code
	}
	dirs, err := lab.LabDirs(root)
	if err != nil {
		return exitFor(err, stderr)
	}
	type variant struct {
		Name  string `json:"name"`
		Kind  string `json:"kind"`
		Needs string `json:"needs,omitempty"`
	}
	type suite struct {
		Name     string    `json:"name"`
		Title    string    `json:"title"`
		Metric   string    `json:"metric"`
		Baseline string    `json:"baseline"`
		Variants []variant `json:"variants"`
	}
	type customFlag struct {
		Name string   `json:"name"`
		Help string   `json:"help"`
		Sets []string `json:"sets"`
	}
	type entry struct {
		Lab         string       `json:"lab"`
		ID          string       `json:"id,omitempty"`
		TitleEN     string       `json:"title_en,omitempty"`
		TitleZH     string       `json:"title_zh,omitempty"`
		Suites      []suite      `json:"suites,omitempty"`
		CustomFlags []customFlag `json:"custom_flags,omitempty"` // the flags of labrun NN for a custom problem
		Error       string       `json:"error,omitempty"`
	}
	var all []entry
	bad := false
	for _, d := range dirs {
		m, err := lab.LoadManifest(filepath.Join(root, "labs", d))
		if err != nil {
			all = append(all, entry{Lab: d, Error: err.Error()})
			bad = true
			continue
		}
		e := entry{Lab: d, ID: m.ID, TitleEN: m.Title.EN, TitleZH: m.Title.ZH}
		for _, f := range m.CustomFlags {
			e.CustomFlags = append(e.CustomFlags, customFlag{f.Name, f.Help.EN, f.Sets})
		}
		for _, s := range m.Suites {
			su := suite{Name: s.Name, Title: s.Title.EN, Metric: s.Metric, Baseline: s.Baseline}
			for _, v := range s.Variants {
				kind := "kernel " + v.File
				switch {
				case v.IsPeer():
					kind = "peer " + v.Peer
				case !v.IsKernel():
					kind = "library " + v.Library
				}
				su.Variants = append(su.Variants, variant{v.Name, kind, strings.Join(v.Needs, " ")})
			}
			e.Suites = append(e.Suites, su)
		}
		all = append(all, e)
	}
	if *asJSON {
		writeJSON(stdout, all)
	} else {
		for _, e := range all {
			if e.Error != "" {
				fmt.Fprintf(stdout, "%s  (manifest error: %s)\n", e.Lab, e.Error)
				continue
			}
			fmt.Fprintf(stdout, "%s  %s — %s\n", e.Lab, e.TitleEN, e.TitleZH)
			if len(e.CustomFlags) > 0 {
				var names []string
				for _, f := range e.CustomFlags {
					names = append(names, "--"+f.Name)
				}
				fmt.Fprintf(stdout, "    custom problems: %s, --param KEY=VALUE (labrun %s --help)\n", strings.Join(names, ", "), e.ID)
			}
			for _, s := range e.Suites {
				fmt.Fprintf(stdout, "    %-18s %s (metric %s, baseline %s)\n", s.Name, s.Title, s.Metric, s.Baseline)
				for _, v := range s.Variants {
					fmt.Fprintln(stdout, strings.TrimRight(fmt.Sprintf("        %-22s %s %s", v.Name, v.Kind, v.Needs), " "))
				}
			}
		}
	}
	if bad {
		return exitUsage
	}
	return exitOK
}
