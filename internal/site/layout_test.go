package site

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// layoutJS measures a loaded page: its height, and every element that sticks out of the text
// column it sits in, unless an ancestor scrolls or clips it (a wide table in a scrolling box is
// fine; a table that pushes the page wider is not).
const layoutJS = `(() => {
	const out = {height: document.documentElement.scrollHeight,
		pageWidth: document.documentElement.scrollWidth, viewport: window.innerWidth, wide: [], spaces: []};
	// Chinese text has no spaces between characters: one there is a source line break that
	// was not joined, or folded YAML.
	const cjk = "[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]";
	const gap = new RegExp(cjk + " +" + cjk, "g");
	if (document.documentElement.lang.startsWith("zh")) {
		for (const el of document.querySelectorAll("p, li, td, th, h1, h2, h3, h4, figcaption, summary, dd, dt, title, a.brand")) {
			if (el.closest("pre")) continue;
			for (const m of (el.innerText || el.textContent || "").matchAll(gap)) {
				out.spaces.push(el.tagName.toLowerCase() + ": …" + m[0] + "…");
			}
		}
	}
	const main = document.querySelector("main");
	if (!main) return out;
	// At a laptop's width a results cell's compact table fits the column: its figures are
	// never scrolled out of sight (at a phone's width it scrolls, its first column fixed).
	if (window.innerWidth >= 1200) {
		for (const s of main.querySelectorAll(".compact-scroll")) {
			if (s.scrollWidth > s.clientWidth + 1) {
				out.wide.push("compact table of " + (s.closest("figure") || {dataset: {}}).dataset.suite + " scrolls by " + (s.scrollWidth - s.clientWidth) + "px");
			}
		}
	}
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
	Spaces    []string `json:"spaces"`
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

// labPages builds the course's site and starts a browser to look at it: the site's folder and
// its lab pages (paths in the site's folder).
func labPages(t *testing.T) (b *browser, out string, pages []string) {
	t.Helper()
	b = startBrowser(t)
	_, out = built(t, realCourse(t), false)
	return b, out, siteFiles(t, out, "*/labs/*.html")
}

// TestPageHeights prints each lab page's height at 1280 px (LABRUN_PAGE_HEIGHTS=FILE also writes
// them to FILE): how long a chapter is to scroll through is what issue 15 measures.
func TestPageHeights(t *testing.T) {
	if os.Getenv("LABRUN_PAGE_HEIGHTS") == "" {
		t.Skip("set LABRUN_PAGE_HEIGHTS=FILE to measure the lab pages' heights")
	}
	b, out, pages := labPages(t)
	var lines []string
	for _, rel := range pages {
		l, err := b.measure(fileURL(out, rel), 1280)
		require.NoError(t, err, rel)
		lines = append(lines, fmt.Sprintf("%s %d", rel, l.Height))
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
	b, out, pages := labPages(t)
	for _, rel := range pages {
		for _, w := range []int{1280, 390} {
			ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
			err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(w), 1000), chromedp.Navigate(fileURL(out, rel)))
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
			name := strings.NewReplacer("/", "_", ".html", "").Replace(rel)
			require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s_%d.png", name, w)), png, 0o644))
		}
	}
}

// TestLayout loads every page of the real course at a laptop's and a phone's width: nothing
// is wider than its column (a wide table scrolls inside its own box), and the page never
// scrolls sideways.
func TestLayout(t *testing.T) {
	b := startBrowser(t)
	_, out := built(t, realCourse(t), false)
	pages := siteFiles(t, out, "*/*.html", "*/*/*.html")
	require.NotEmpty(t, pages)
	for _, rel := range pages {
		for _, w := range []int{1280, 390} {
			l, err := b.measure(fileURL(out, rel), w)
			require.NoError(t, err, rel)
			assert.Empty(t, l.Wide, "%s at %d px: elements wider than the text column", rel, w)
			assert.LessOrEqual(t, l.PageWidth, l.Viewport, "%s at %d px: the page scrolls sideways", rel, w)
			if w == 1280 {
				assert.Empty(t, l.Spaces, "%s: spaces between Chinese characters", rel)
			}
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
	for _, course := range []string{realCourse(t), fixture(t)} {
		_, out := built(t, course, false)
		svgs := siteFiles(t, out, "plots/*/*.svg")
		require.NotEmpty(t, svgs)
		for _, p := range svgs {
			ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
			err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(fileURL(out, p)))
			var outside []string
			if err == nil {
				outside, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](frameJS))
			}
			cancel()
			require.NoError(t, err, p)
			assert.Empty(t, outside, "%s: drawn outside the figure", p)
		}
	}
}

// glyphJS says whether Chinese text is drawn from a font that has it: each character of a sample
// from the page is drawn on a canvas in the page's font and compared with a code point no font
// has, which every browser draws as the same missing-glyph box ("tofu").
const glyphJS = `(() => {
	const el = document.querySelector("main h1") || document.querySelector("main");
	const cs = getComputedStyle(el);
	const sample = Array.from((el.textContent || "").matchAll(/[\u4e00-\u9fff]/g)).map(m => m[0]).slice(0, 6);
	if (sample.length === 0) return {chars: 0, boxes: 0, family: cs.fontFamily};
	const c = document.createElement("canvas");
	c.width = c.height = 48;
	const g = c.getContext("2d");
	const draw = ch => {
		g.clearRect(0, 0, 48, 48);
		g.font = cs.fontWeight + " 32px " + cs.fontFamily;
		g.fillText(ch, 4, 36);
		return Array.from(g.getImageData(0, 0, 48, 48).data).join(",");
	};
	const tofu = draw("\u{10FFFD}");
	return {chars: sample.length, boxes: sample.filter(ch => draw(ch) === tofu).length, family: cs.fontFamily};
})()`

type glyphs struct {
	Chars  int    `json:"chars"`
	Boxes  int    `json:"boxes"`
	Family string `json:"family"`
}

func (b *browser) glyphs(url string) (glyphs, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		return glyphs{}, err
	}
	return chromedp.Run(ctx, chromedp.Evaluate[glyphs](glyphJS))
}

// TestChineseGlyphsComeFromACJKFont fails when the Chinese pages would show boxes: no CJK font
// is installed (make setup installs fonts-noto-cjk), or the stylesheet names none that exists.
// It also proves that the check sees boxes, with a browser that has no CJK font.
func TestChineseGlyphsComeFromACJKFont(t *testing.T) {
	_, out := built(t, realCourse(t), false)
	pages := append(siteFiles(t, out, "zh/labs/*.html"), "zh/index.html")

	b := startBrowser(t)
	for _, p := range pages {
		g, err := b.glyphs(fileURL(out, p))
		require.NoError(t, err, p)
		require.Positive(t, g.Chars, "%s: a Chinese heading to look at", p)
		assert.Zero(t, g.Boxes, "%s: %d of %d Chinese characters drawn as boxes in %s: install a CJK font (apt-get install fonts-noto-cjk; make setup does it)",
			p, g.Boxes, g.Chars, g.Family)
	}

	t.Run("sees boxes without a CJK font", func(t *testing.T) {
		dir := t.TempDir()
		conf := filepath.Join(dir, "fonts.conf")
		// Only DejaVu, which has no Chinese: what a machine without fonts-noto-cjk shows.
		writeFile(t, dir, "fonts.conf", `<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir>/usr/share/fonts/truetype/dejavu</dir><cachedir>`+dir+`/cache</cachedir></fontconfig>`)
		if _, err := os.Stat("/usr/share/fonts/truetype/dejavu"); err != nil {
			t.Skip("no DejaVu fonts to build a machine without CJK fonts from")
		}
		bare := startBrowser(t, chromedp.Env("FONTCONFIG_FILE="+conf))
		g, err := bare.glyphs(fileURL(out, pages[0]))
		require.NoError(t, err)
		assert.Equal(t, g.Chars, g.Boxes, "without a CJK font every character is a box, and the check says so")
	})
}

// TestLanguageSwitchKeepsTheSection: a reader in the middle of a chapter who switches language
// lands on the same section of the other page.
func TestLanguageSwitchKeepsTheSection(t *testing.T) {
	b := startBrowser(t)
	_, out := built(t, fixture(t), true)
	for _, from := range []string{"en", "zh"} {
		url := fileURL(out, from+"/labs/02_gemm.html")
		ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 500), chromedp.Navigate(url)))
		// Scroll a little past the last section heading, as a reader would be.
		id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const hs = document.querySelectorAll("main h2[id], main h3[id]");
			const h = hs[hs.length - 1]; document.body.style.paddingBottom = "2000px";
			window.scrollTo(0, h.getBoundingClientRect().top + window.scrollY - 20); return h.id; })()`))
		cancel()
		require.NoError(t, err)
		require.NotEmpty(t, id)
		st, _, err := b.load(chromedp.Click(chromedp.CSS("a.lang-switch")), false)
		require.NoError(t, err)
		assert.Equal(t, fileURL(out, otherLang(from)+"/labs/02_gemm.html")+"#"+id, st.URL, "from %s: the switch keeps the section", from)
	}
}
