package profile

import (
	"encoding/csv"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Launch is one profiled kernel launch as ncu's raw page reports it.
type Launch struct {
	ID      int
	Kernel  string // the function name ("sgemm_dbuf"; C++ kernels with their parameter list)
	Block   string // "(256, 1, 1)"
	Grid    string
	Device  string
	CC      string
	Metrics map[string]Metric // every metric column, by ncu's name
}

// Metric is one value with its unit (ncu's base units: byte, nsecond, %, register/thread...).
type Metric struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
	Text  string  `json:"text,omitempty"` // a value that is not a number, as ncu printed it
}

// Report is what one ncu log holds: the launches and ncu's diagnostic lines.
type Report struct {
	Launches []Launch
	Messages []string // ==PROF==, ==WARNING==, ==ERROR== lines, in order
}

// ParseLog reads the log that `ncu --csv --page raw --print-units base --log-file F` writes: the
// tool's ==PROF==/==WARNING==/==ERROR== lines, then one CSV table whose first row names the
// columns, whose second gives their units and whose other rows are the profiled launches. It
// returns the report and the error ncu reported, if any (with the launches that were profiled
// before it, so that nothing measured is lost).
func ParseLog(log []byte) (*Report, error) {
	rep := &Report{}
	var table []string
	for _, line := range strings.Split(strings.ReplaceAll(string(log), "\r\n", "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "=="):
			rep.Messages = append(rep.Messages, strings.TrimSpace(line))
		case strings.HasPrefix(line, `"`) && (len(table) > 0 || strings.HasPrefix(line, `"ID",`)):
			table = append(table, line)
		}
	}
	if len(table) > 0 {
		launches, err := parseTable(strings.Join(table, "\n"))
		if err != nil {
			return rep, fmt.Errorf("%w: its CSV report does not parse (%v); run the command again, or look at the log", ErrProfiler, err)
		}
		rep.Launches = launches
	}
	return rep, classify(rep.Messages, len(rep.Launches))
}

// The columns of the raw page that describe the launch rather than measure it.
var launchColumns = map[string]bool{"ID": true, "Process ID": true, "Process Name": true, "Host Name": true,
	"Kernel Name": true, "Kernel Time": true, "Context": true, "Stream": true, "Block Size": true, "Grid Size": true,
	"Device": true, "CC": true, "Section Name": true}

func parseTable(text string) ([]Launch, error) {
	r := csv.NewReader(strings.NewReader(text))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("a header without the row of units")
	}
	head, units := rows[0], rows[1]
	if len(units) != len(head) {
		return nil, fmt.Errorf("%d column names but %d units", len(head), len(units))
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	if _, ok := col["Kernel Name"]; !ok {
		return nil, fmt.Errorf("no \"Kernel Name\" column (is this the raw page?)")
	}
	get := func(row []string, name string) string {
		if i, ok := col[name]; ok && i < len(row) {
			return row[i]
		}
		return ""
	}
	var out []Launch
	for n, row := range rows[2:] {
		if len(row) != len(head) {
			return nil, fmt.Errorf("row %d has %d fields, the header %d", n+3, len(row), len(head))
		}
		l := Launch{Kernel: get(row, "Kernel Name"), Block: get(row, "Block Size"), Grid: get(row, "Grid Size"),
			Device: get(row, "Device"), CC: get(row, "CC"), Metrics: map[string]Metric{}}
		l.ID, _ = strconv.Atoi(get(row, "ID"))
		for i, h := range head {
			if launchColumns[h] || row[i] == "" {
				continue
			}
			l.Metrics[h] = parseValue(row[i], units[i])
		}
		out = append(out, l)
	}
	return out, nil
}

var thousands = regexp.MustCompile(`^-?\d{1,3}(,\d{3})+(\.\d+)?$`)

// parseValue reads one cell: a number (ncu may group thousands with commas), else text
// ("n/a", a tuple such as "(256, 1, 1)").
func parseValue(s, unit string) Metric {
	t := strings.TrimSpace(s)
	if thousands.MatchString(t) {
		t = strings.ReplaceAll(t, ",", "")
	}
	if v, err := strconv.ParseFloat(t, 64); err == nil {
		return Metric{Value: v, Unit: unit}
	}
	return Metric{Text: s, Unit: unit}
}
