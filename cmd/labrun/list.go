package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

func cmdList(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "write JSON to stdout")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: labrun list [--json]\n\nLists the labs with their suites and variants.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitUsage
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
		Name, Kind, Needs string
	}
	type suite struct {
		Name, Title, Metric, Baseline string
		Variants                      []variant
	}
	type entry struct {
		Lab, ID, TitleEN, TitleZH string
		Suites                    []suite
		Error                     string `json:",omitempty"`
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
		for _, s := range m.Suites {
			su := suite{Name: s.Name, Title: s.Title.EN, Metric: s.Metric, Baseline: s.Baseline}
			for _, v := range s.Variants {
				kind := "kernel " + v.File
				if !v.IsKernel() {
					kind = "library " + v.Library
				}
				needs := ""
				for _, n := range v.Needs {
					needs += n + " "
				}
				su.Variants = append(su.Variants, variant{v.Name, kind, needs})
			}
			e.Suites = append(e.Suites, su)
		}
		all = append(all, e)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(all)
	} else {
		for _, e := range all {
			if e.Error != "" {
				fmt.Fprintf(stdout, "%s  (manifest error: %s)\n", e.Lab, e.Error)
				continue
			}
			fmt.Fprintf(stdout, "%s  %s — %s\n", e.Lab, e.TitleEN, e.TitleZH)
			for _, s := range e.Suites {
				fmt.Fprintf(stdout, "    %-18s %s (metric %s, baseline %s)\n", s.Name, s.Title, s.Metric, s.Baseline)
				for _, v := range s.Variants {
					fmt.Fprintf(stdout, "        %-22s %s %s\n", v.Name, v.Kind, v.Needs)
				}
			}
		}
	}
	if bad {
		return exitUsage
	}
	return exitOK
}
