package grade

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

// studentReadmes are the student edition's README.md and README.zh.md: the embedded texts with
// the table of the exercises and the example commands filled in from the edition's manifests.
func studentReadmes(dir string) (en, zh string, err error) {
	labs, err := Labs(dir)
	if err != nil {
		return "", "", err
	}
	if len(labs) == 0 {
		return "", "", fmt.Errorf("export: the course has no lab with exercises")
	}
	var tabEN, tabZH strings.Builder
	tabEN.WriteString("| lab | exercise (`--variant`) | file | points | of which hidden | speed points (GPU only) | GPUs it needs | pass mark |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	tabZH.WriteString("| 实验 | 练习（`--variant`） | 文件 | 分值 | 其中隐藏测试 | 速度分（仅 GPU） | 所需 GPU 数 | 及格线 |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	var ids []string
	exLab, exVariant, exProblem := "", "", ""
	for _, d := range labs {
		m, err := lab.LoadManifest(filepath.Join(dir, "labs", d))
		if err != nil {
			return "", "", err
		}
		g, _ := GradingOf(m)
		ids = append(ids, m.ID)
		for _, ex := range g.Exercises {
			points, hidden := 0.0, 0.0
			tests := ex.Tests
			if len(tests) == 0 {
				for _, p := range ex.V.Suite.Problems.Grade {
					tests = append(tests, lab.GradeTest{Problem: p.Name, Points: ex.Points})
				}
			}
			for _, t := range tests {
				points += t.Points
				if t.Hidden {
					hidden += t.Points
				} else if exProblem == "" && len(t.TestProblems()) > 0 {
					exLab, exVariant, exProblem = m.ID, ex.V.Name, t.TestProblems()[0]
				}
			}
			speed := "–"
			if ex.Speed != nil && ex.Ref != nil {
				speed = pts(ex.Speed.Points)
			}
			row := func(title string) string {
				return fmt.Sprintf("| %s %s | `%s` | `labs/%s/%s` | %s | %s | %s | %d | %.0f%% |\n", m.ID, mdEscape(title), ex.V.Name, d,
					filepath.ToSlash(ex.V.File), pts(points), pts(hidden), speed, m.DeviceCount(), g.PassMark*100)
			}
			tabEN.WriteString(row(m.Title.EN))
			tabZH.WriteString(row(m.Title.ZH))
		}
	}
	fill := func(text, table string) string {
		return strings.NewReplacer("<!-- exercises -->", strings.TrimRight(table, "\n"), "{{lab}}", exLab,
			"{{variant}}", exVariant, "{{problem}}", exProblem, "{{labs}}", strings.Join(ids, ",")).Replace(text)
	}
	return fill(studentReadmeEN, tabEN.String()), fill(studentReadmeZH, tabZH.String()), nil
}
