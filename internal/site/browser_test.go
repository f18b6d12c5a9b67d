package site

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chromiumPath finds a Chromium or Chrome: $LABRUN_CHROMIUM, else the usual names on PATH.
func chromiumPath() string {
	if p := os.Getenv("LABRUN_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// pageState is what the browser reports about a loaded page.
type pageState struct {
	Lang       string   `json:"lang"`
	URL        string   `json:"url"`
	Switch     string   `json:"switch"`
	Plots      int      `json:"plots"`
	PlotsShown int      `json:"plotsShown"`
	Broken     []string `json:"broken"`
	Position   string   `json:"position"`
	Title      string   `json:"title"`
}

const stateJS = `(() => {
	const imgs = Array.from(document.images);
	const plots = Array.from(document.querySelectorAll("img.plot-img"));
	const sw = document.querySelector("a.lang-switch");
	const head = document.querySelector("header.top");
	return {
		lang: document.documentElement.lang,
		url: location.href,
		switch: sw ? sw.href : "",
		plots: plots.length,
		plotsShown: plots.filter(i => i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().width > 100).length,
		broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute("src")),
		position: head ? getComputedStyle(head).position : "",
		title: document.title,
	};
})()`

// browser is one headless Chromium for all the pages of the test.
type browser struct {
	ctx  context.Context
	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
}

func startBrowser(t *testing.T, extra ...chromedp.ExecAllocatorOption) *browser {
	exe := chromiumPath()
	if exe == "" {
		t.Skip("no Chromium found: install it (Debian: apt-get install -y chromium) or set LABRUN_CHROMIUM=/path/to/chrome to run the browser test")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	opts = append(opts, extra...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	b := &browser{ctx: ctx}
	console := chromedp.Console(ctx)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.msgs = append(b.msgs, m)
			b.mu.Unlock()
		}
	}()
	return b
}

// errorsSince returns the console errors and exceptions logged after message n.
func (b *browser) errorsSince(n int) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.msgs[n:] {
		if m.Type == chromedp.ConsoleError || m.IsException() {
			out = append(out, m.String()+" ("+m.URL+")")
		}
	}
	return out
}

func (b *browser) mark() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.msgs)
}

// load runs an action that loads a page (a navigation, or a click that navigates) and returns
// the page's state and the console errors it logged.
func (b *browser) load(act chromedp.Action[chromedp.Void], navigates bool) (pageState, []string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	n := b.mark()
	var err error
	if navigates {
		err = chromedp.Do(ctx, act)
	} else {
		_, err = chromedp.Run(ctx, chromedp.WaitEvent(cdppage.LoadEventFired, nil, act))
	}
	if err != nil {
		return pageState{}, nil, err
	}
	st, err := chromedp.Run(ctx, chromedp.Evaluate[pageState](stateJS))
	if err != nil {
		return st, nil, err
	}
	// Console messages arrive asynchronously; a round trip through the page lets them in.
	chromedp.Run(ctx, chromedp.Evaluate[int](`0`))
	return st, b.errorsSince(n), nil
}

// TestBrowser loads every page of two sites (the synthetic course, with every kind of cell and
// plot, and the repository's real course) in one headless Chromium from file://: no console
// errors, every image and plot drawn, the stylesheet applied, and the language switch leading to
// the same page in the other language and back. It also serves a site under a sub-path over HTTP.
func TestBrowser(t *testing.T) {
	b := startBrowser(t)
	started := time.Now()

	_, fixtureOut := built(t, fixture(t), true)
	_, realOut := built(t, realCourse(t), true)

	pages := 0
	for _, site := range []struct{ name, dir string }{{"synthetic", fixtureOut}, {"real", realOut}} {
		t.Run(site.name, func(t *testing.T) {
			en := siteFiles(t, site.dir, "en/*.html", "en/*/*.html")
			require.NotEmpty(t, en)
			for _, rel := range en {
				zhRel := "zh" + strings.TrimPrefix(rel, "en")
				// The English page.
				st, errs, err := b.load(chromedp.Navigate(fileURL(site.dir, rel)), true)
				require.NoError(t, err, rel)
				pages++
				checkPage(t, site.dir, rel, "en", st, errs)
				assert.Equal(t, fileURL(site.dir, zhRel), st.Switch, "%s: the language switch leads to the same page in Chinese", rel)
				// Follow the switch: the Chinese page.
				st, errs, err = b.load(chromedp.Click(chromedp.CSS("a.lang-switch")), false)
				require.NoError(t, err, "%s: following the language switch", rel)
				pages++
				assert.Equal(t, fileURL(site.dir, zhRel), st.URL, "%s: the switch went to the Chinese page", rel)
				checkPage(t, site.dir, zhRel, "zh-CN", st, errs)
				assert.Equal(t, fileURL(site.dir, rel), st.Switch, "%s: and back", zhRel)
			}
			// The root page chooses a language and goes there.
			ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
			defer cancel()
			// The page replaces itself at once, so the first load may be cut short: only where
			// the browser ends up matters.
			_ = chromedp.Do(ctx, chromedp.Navigate(fileURL(site.dir, "index.html")))
			deadline := time.Now().Add(5 * time.Second)
			loc := ""
			for time.Now().Before(deadline) {
				loc, _ = chromedp.Run(ctx, chromedp.Location())
				if strings.HasSuffix(loc, "/en/index.html") || strings.HasSuffix(loc, "/zh/index.html") {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			assert.Regexp(t, `/(en|zh)/index\.html$`, loc, "the root page sends the reader to a language")
		})
	}

	// Served from a sub-path (as on GitHub Pages): relative links still work.
	t.Run("sub-path", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.Handle("/kernel-labs/", http.StripPrefix("/kernel-labs/", http.FileServer(http.Dir(fixtureOut))))
		srv := httptest.NewServer(mux)
		defer srv.Close()
		for _, rel := range []string{"en/labs/02_gemm.html", "zh/devices/synthetic-gpu.html", "en/about.html"} {
			st, errs, err := b.load(chromedp.Navigate(srv.URL+"/kernel-labs/"+rel), true)
			require.NoError(t, err, rel)
			pages++
			checkPage(t, fixtureOut, rel, st.Lang, st, errs)
		}
	})
	// The checks see what goes wrong: a script error, a missing image, a plot that is not drawn.
	t.Run("catches problems", func(t *testing.T) {
		editFile(t, fixtureOut, "en/labs/02_gemm.html", func(s string) string {
			return strings.Replace(s, "</main>",
				`<img src="nope.png"><img class="plot-img" src="../../plots/none.svg"><script>console.error("boom"); undefinedFn();</script></main>`, 1)
		})
		st, errs, err := b.load(chromedp.Navigate(fileURL(fixtureOut, "en/labs/02_gemm.html")), true)
		require.NoError(t, err)
		pages++
		joined := strings.Join(errs, "\n")
		assert.Contains(t, joined, "boom")
		assert.Contains(t, joined, "undefinedFn")
		assert.Contains(t, joined, "ERR_FILE_NOT_FOUND")
		assert.Contains(t, st.Broken, "nope.png")
		assert.Equal(t, st.Plots-1, st.PlotsShown)
	})
	t.Logf("%d page loads in one browser in %.1fs", pages, time.Since(started).Seconds())
}

func fileURL(dir, rel string) string {
	return "file://" + path.Join(filepath.ToSlash(dir), rel)
}

func checkPage(t *testing.T, dir, rel, lang string, st pageState, errs []string) {
	t.Helper()
	assert.Empty(t, errs, "%s: console errors", rel)
	assert.Equal(t, lang, st.Lang, "%s: <html lang>", rel)
	assert.Empty(t, st.Broken, "%s: images that did not load", rel)
	assert.Equal(t, "sticky", st.Position, "%s: the stylesheet is applied", rel)
	assert.NotEmpty(t, st.Title, rel)
	want := strings.Count(read(t, dir, rel), `class="plot-img"`)
	assert.Equal(t, want, st.Plots, "%s: plots on the page", rel)
	assert.Equal(t, want, st.PlotsShown, "%s: plots drawn", rel)
}
