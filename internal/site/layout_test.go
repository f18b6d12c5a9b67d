package site

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

// layoutJS measures a loaded page: its height, and every element that sticks out of the text
// column it sits in, unless an ancestor scrolls or clips it (a wide table in a scrolling box is
// fine; a table that pushes the page wider is not).
const layoutJS = `(() => {
	const out = {height: document.documentElement.scrollHeight,
		pageWidth: document.documentElement.scrollWidth, viewport: window.innerWidth, wide: []};
	const main = document.querySelector("main");
	if (!main) return out;
	const cs = getComputedStyle(main);
	const mr = main.getBoundingClientRect();
	const right = mr.right - parseFloat(cs.paddingRight) + 1;
	const left = mr.left + parseFloat(cs.paddingLeft) - 1;
	const clipped = el => {
		for (let a = el.parentElement; a && a !== main; a = a.parentElement) {
			const o = getComputedStyle(a).overflowX;
			if (o === "auto" || o === "scroll" || o === "hidden") return true;
		}
		return false;
	};
	for (const el of main.querySelectorAll("*")) {
		const r = el.getBoundingClientRect();
		if (r.width === 0 || r.height === 0) continue;
		if ((r.right > right || r.left < left) && !clipped(el)) {
			out.wide.push(el.tagName.toLowerCase() + (el.className ? "." + String(el.className).split(" ")[0] : "") +
				" " + Math.round(r.width) + "px (" + Math.round(r.right - right) + "px past the column): " +
				(el.textContent || "").trim().slice(0, 60));
			if (out.wide.length > 20) break;
		}
	}
	return out;
})()`

type layout struct {
	Height    int      `json:"height"`
	PageWidth int      `json:"pageWidth"`
	Viewport  int      `json:"viewport"`
	Wide      []string `json:"wide"`
}

// measure loads a page at a viewport width and measures it.
func (b *browser) measure(url string, width int) (layout, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), 900), chromedp.Navigate(url)); err != nil {
		return layout{}, err
	}
	return chromedp.Run(ctx, chromedp.Evaluate[layout](layoutJS))
}

// TestPageHeights prints each lab page's height at 1280 px (LABRUN_PAGE_HEIGHTS=FILE also writes
// them to FILE): how long a chapter is to scroll through is what issue 15 measures.
func TestPageHeights(t *testing.T) {
	if os.Getenv("LABRUN_PAGE_HEIGHTS") == "" {
		t.Skip("set LABRUN_PAGE_HEIGHTS=FILE to measure the lab pages' heights")
	}
	b := startBrowser(t)
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	_, out, err := build(t, root, false)
	require.NoError(t, err)
	pages, _ := filepath.Glob(filepath.Join(out, "*", "labs", "*.html"))
	sort.Strings(pages)
	var lines []string
	for _, p := range pages {
		rel, _ := filepath.Rel(out, p)
		l, err := b.measure(fileURL(out, filepath.ToSlash(rel)), 1280)
		require.NoError(t, err, rel)
		lines = append(lines, fmt.Sprintf("%s %d", filepath.ToSlash(rel), l.Height))
	}
	t.Log("\n" + strings.Join(lines, "\n"))
	require.NoError(t, os.WriteFile(os.Getenv("LABRUN_PAGE_HEIGHTS"), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
}

// TestScreenshots writes screenshots for a reader's eye (LABRUN_SCREENSHOTS=DIR): each lab page at
// 1280 and 390 px, the window scrolled to the page's first results cell.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("LABRUN_SCREENSHOTS")
	if dir == "" {
		t.Skip("set LABRUN_SCREENSHOTS=DIR to take screenshots of the lab pages")
	}
	b := startBrowser(t)
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	_, out, err := build(t, root, false)
	require.NoError(t, err)
	pages, _ := filepath.Glob(filepath.Join(out, "*", "labs", "*.html"))
	for _, p := range pages {
		rel, _ := filepath.Rel(out, p)
		for _, w := range []int{1280, 390} {
			ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
			err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(w), 1000), chromedp.Navigate(fileURL(out, filepath.ToSlash(rel))))
			if err == nil {
				_, err = chromedp.Run(ctx, chromedp.Evaluate[int](`(() => { const c = document.querySelector("figure.cell-results"); if (c) window.scrollTo(0, c.getBoundingClientRect().top + window.scrollY - 80); return 0; })()`))
			}
			var png []byte
			if err == nil {
				_ = chromedp.Do(ctx, chromedp.Sleep(200*time.Millisecond))
				png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
			}
			cancel()
			require.NoError(t, err, rel)
			name := strings.NewReplacer("/", "_", ".html", "").Replace(filepath.ToSlash(rel))
			require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s_%d.png", name, w)), png, 0o644))
		}
	}
}

// TestLayout loads every page of the real course at a laptop's and a phone's width: nothing
// is wider than its column (a wide table scrolls inside its own box), and the page never
// scrolls sideways.
func TestLayout(t *testing.T) {
	b := startBrowser(t)
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	_, out, err := build(t, root, false)
	require.NoError(t, err)
	pages, _ := filepath.Glob(filepath.Join(out, "*", "*.html"))
	more, _ := filepath.Glob(filepath.Join(out, "*", "*", "*.html"))
	pages = append(pages, more...)
	sort.Strings(pages)
	require.NotEmpty(t, pages)
	for _, p := range pages {
		rel, _ := filepath.Rel(out, p)
		rel = filepath.ToSlash(rel)
		for _, w := range []int{1280, 390} {
			l, err := b.measure(fileURL(out, rel), w)
			require.NoError(t, err, rel)
			assert.Empty(t, l.Wide, "%s at %d px: elements wider than the text column", rel, w)
			assert.LessOrEqual(t, l.PageWidth, l.Viewport, "%s at %d px: the page scrolls sideways", rel, w)
		}
	}
}

// frameJS lists what a figure draws outside its own frame (a title cut at both sides, a label
// off the edge), loaded as the SVG document itself.
const frameJS = `(() => {
	const svg = document.documentElement;
	const r = svg.getBoundingClientRect();
	const out = [];
	for (const el of svg.querySelectorAll("text, path, line, rect, circle, polyline, polygon")) {
		const b = el.getBoundingClientRect();
		if (b.width === 0 && b.height === 0) continue;
		if (b.left < r.left - 0.5 || b.top < r.top - 0.5 || b.right > r.right + 0.5 || b.bottom > r.bottom + 0.5) {
			out.push(el.tagName + " [" + Math.round(b.left - r.left) + "," + Math.round(b.top - r.top) + " – " +
				Math.round(b.right - r.left) + "," + Math.round(b.bottom - r.top) + "] in " + Math.round(r.width) + "×" +
				Math.round(r.height) + ": " + (el.textContent || "").slice(0, 60));
			if (out.length > 10) break;
		}
	}
	return out;
})()`

// TestPlotsStayInTheirFrame opens every figure of the real course and of the test course in
// Chromium, with the fonts a reader has: nothing may be drawn outside the figure.
func TestPlotsStayInTheirFrame(t *testing.T) {
	b := startBrowser(t)
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	for _, course := range []string{root, fixture(t)} {
		_, out, err := build(t, course, false)
		require.NoError(t, err)
		svgs, _ := filepath.Glob(filepath.Join(out, "plots", "*", "*.svg"))
		require.NotEmpty(t, svgs)
		for _, p := range svgs {
			ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
			err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate("file://"+filepath.ToSlash(p)))
			var outside []string
			if err == nil {
				outside, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](frameJS))
			}
			cancel()
			require.NoError(t, err, p)
			assert.Empty(t, outside, "%s: drawn outside the figure", filepath.Base(p))
		}
	}
}
