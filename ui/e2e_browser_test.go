package ui_test

// A headless Chromium tab for the end-to-end tests: steps with bounded
// timeouts, screenshots, and checks that read the rendered page.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath is $CHROMIUM, or Debian's chromium on PATH.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("Chromium is required for the UI end-to-end test: run scripts/install-chromium (Debian's chromium package) or set CHROMIUM")
	return ""
}

// e2eBrowser is one headless Chromium tab for one test.
type e2eBrowser struct {
	t       *testing.T
	ctx     context.Context
	base    string
	shotDir string
	shots   int
}

func newE2EBrowser(t *testing.T, base string) *e2eBrowser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860),
	)
	// Bounded: the whole browser session of one test ends within 4 minutes.
	ctx, cancelTimeout := context.WithTimeout(context.Background(), 4*time.Minute)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelTab(); cancelAlloc(); cancelTimeout() })

	dir, err := filepath.Abs(filepath.Join("..", "testoutput", "ui", strings.TrimPrefix(t.Name(), "TestE2E_")))
	if err != nil {
		t.Fatal(err)
	}
	// Only this run's pictures: stale ones would mislead whoever looks.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b := &e2eBrowser{t: t, ctx: tabCtx, base: base, shotDir: dir}
	if err := chromedp.Do(tabCtx); err != nil { // starts the browser
		t.Fatalf("start Chromium: %v", err)
	}
	return b
}

// do runs steps; on failure it saves a screenshot of where it stopped.
func (b *e2eBrowser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 45*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.screenshot("failed-" + strings.ReplaceAll(what, " ", "-"))
		loc, _ := chromedp.Run(b.ctx, chromedp.Location())
		b.t.Fatalf("%s: %v (page %s)", what, err, loc)
	}
}

func (b *e2eBrowser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func (b *e2eBrowser) value(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("value of %s: %v", sel, err)
	}
	return s
}

func (b *e2eBrowser) html() string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.OuterHTML(chromedp.CSS("html")))
	if err != nil {
		b.t.Fatalf("page HTML: %v", err)
	}
	return s
}

func (b *e2eBrowser) requireText(sel string, wants ...string) {
	b.t.Helper()
	got := b.text(sel)
	for _, w := range wants {
		if !strings.Contains(got, w) {
			b.screenshot("failed-text")
			b.t.Fatalf("%s does not contain %q:\n%s", sel, w, got)
		}
	}
}

// screenshot saves the whole page as testoutput/ui/<test>/NN-name.png.
func (b *e2eBrowser) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	b.shots++
	path := filepath.Join(b.shotDir, fmt.Sprintf("%02d-%s.png", b.shots, name))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Errorf("save screenshot: %v", err)
	}
}

func (b *e2eBrowser) open(path string) chromedp.Action[chromedp.Void] {
	return chromedp.Navigate(b.base + path)
}

func (b *e2eBrowser) signIn(token string) {
	b.t.Helper()
	b.do("sign in",
		b.open("/ui"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SetValue(chromedp.ID("token"), token),
		chromedp.Click(chromedp.CSS(`form[action="/ui/sign-in"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(".sidebar")),
	)
}

// requireLabelledControls fails when a form control on the page has no
// accessible name (a <label>, aria-label or aria-labelledby).
func (b *e2eBrowser) requireLabelledControls() {
	b.t.Helper()
	unlabelled, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("input:not([type=hidden]), textarea, select")]
		.filter(e => e.labels.length === 0 && !e.getAttribute("aria-label") && !e.getAttribute("aria-labelledby"))
		.map(e => e.outerHTML).join("\n")`))
	if err != nil {
		b.t.Fatal(err)
	}
	if unlabelled != "" {
		b.t.Fatalf("form controls without a label:\n%s", unlabelled)
	}
}

// requireNoHorizontalScroll fails when the page is wider than the screen
// (wide tables scroll inside their own box instead), naming the culprit.
func (b *e2eBrowser) requireNoHorizontalScroll() {
	b.t.Helper()
	culprit, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(() => {
		const w = document.documentElement.clientWidth;
		if (document.documentElement.scrollWidth <= w) return "";
		const wide = [...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > w + 1 && (e.matches(".table-wrap") || !e.closest(".table-wrap")));
		return "page is " + document.documentElement.scrollWidth + "px wide on a " + w + "px screen; widest: " +
			wide.slice(0, 5).map(e => e.tagName + "." + e.className + " (" + Math.round(e.getBoundingClientRect().right) + "px)").join(", ");
	})()`))
	if err != nil {
		b.t.Fatal(err)
	}
	if culprit != "" {
		b.t.Fatal(culprit)
	}
}

// apiStatus calls GET /api/v2/accounts with token and returns the status.
func apiStatus(t *testing.T, base, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v2/accounts", nil)
	req.Header.Set("Authorization", "Token "+token)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
