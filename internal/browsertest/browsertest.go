// Package browsertest starts a real headless Chromium for tests of baton's
// pages (the status page of 'baton serve', the drill's HTML report) and
// drives it with chromedp.
//
// Without a Chromium binary a test skips with a message; with
// BATON_REQUIRE listing "chromium" (as .ci/run sets it) it fails instead,
// see internal/testenv.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/batonhq/baton/internal/testenv"
)

// Flags are the command-line flags every test browser gets: no sandbox (CI
// runs as root in a container), no GPU, and nothing that reaches the
// network by itself (first-run pages, component updates, sync, QUIC).
var Flags = []string{
	"--no-sandbox", "--disable-gpu", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-quic", "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
}

// ScreenshotDirVar names the variable that, when set to a directory, makes
// Screenshot also write the screenshots there (how the images of the README and
// docs/operate.md are made: see docs/development.md).
const ScreenshotDirVar = "BATON_SCREENSHOTS"

// New returns a chromedp context for a new tab, bounded by timeout, in a
// browser context of its own (no cookies, storage or cache shared with
// another test's tab). The tab is closed when the test ends.
//
// The browser, a headless Chromium with a fresh profile in a temporary
// directory, is shared by the tests of the binary when its TestMain runs
// them through testenv.Run (pgtest.Main does): started by the first New,
// stopped when the tests are over. Each start took about a second of CPU,
// ten in cmd/baton's tests. Otherwise each test starts one of its own.
func New(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	bin := testenv.Chromium(t)
	var browser context.Context
	if shared := sharedBrowser(bin); shared != nil {
		b, err := shared.get()
		if err != nil {
			testenv.Require(t, "chromium", fmt.Sprintf("chromium at %s does not start: %v", bin, err))
		}
		browser = b
	} else {
		dir := t.TempDir()
		b, stop, err := start(bin, dir)
		t.Cleanup(stop)
		if err != nil {
			testenv.Require(t, "chromium", fmt.Sprintf("chromium at %s does not start: %v", bin, err))
		}
		browser = b
	}
	ctx, cancelTab := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	tctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
	})
	if err := chromedp.Do(tctx); err != nil {
		testenv.Require(t, "chromium", fmt.Sprintf("chromium at %s opens no tab: %v", bin, err))
	}
	return tctx
}

// start starts a headless Chromium with its profile in dir and returns
// the context of its first tab (which New's tabs are made from) and what
// stops it. The browser is up when start returns without an error, so
// that a broken installation fails at once with a clear message rather
// than in the middle of a test.
func start(bin, dir string) (context.Context, func(), error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1100, 900),
	)
	for _, f := range Flags {
		name, val := f[2:], any(true)
		for i := range len(name) {
			if name[i] == '=' {
				name, val = name[:i], name[i+1:]
				break
			}
		}
		opts = append(opts, chromedp.Flag(name, val))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(actx)
	stop := func() {
		cancelBrowser()
		cancelAlloc()
	}
	if err := chromedp.Do(ctx); err != nil {
		stop()
		return nil, func() {}, err
	}
	return ctx, stop, nil
}

// shared is the browser of a test binary whose TestMain calls
// testenv.Run.
type shared struct {
	bin string

	mu      sync.Mutex
	browser context.Context // nil until started, or after it died
	stop    func()
	dir     string
}

var (
	sharedMu sync.Mutex
	theOne   *shared
	noShare  bool // testenv.AtExit refused: no testenv.Run in this binary
)

// sharedBrowser returns the binary's shared browser of bin, or nil when
// the tests do not run through testenv.Run.
func sharedBrowser(bin string) *shared {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if noShare {
		return nil
	}
	if theOne == nil {
		s := &shared{bin: bin}
		if !testenv.AtExit(s.close) {
			noShare = true
			return nil
		}
		theOne = s
	}
	return theOne
}

// get returns the running browser, starting it (again, if it died).
func (s *shared) get() (context.Context, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.browser != nil && s.browser.Err() == nil {
		return s.browser, nil
	}
	s.closeLocked()
	dir, err := os.MkdirTemp("", "baton-browser-")
	if err != nil {
		return nil, err
	}
	b, stop, err := start(s.bin, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.browser, s.stop, s.dir = b, stop, dir
	return b, nil
}

func (s *shared) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked()
}

func (s *shared) closeLocked() {
	if s.stop != nil {
		s.stop()
		os.RemoveAll(s.dir)
	}
	s.browser, s.stop, s.dir = nil, nil, ""
}

// Screenshot captures the page (the whole document) as PNG. When
// BATON_SCREENSHOTS names a directory and name is not empty, it also writes
// the image there as name.
func Screenshot(t *testing.T, ctx context.Context, name string) []byte {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	save(t, name, png)
	return png
}

func save(t *testing.T, name string, png []byte) {
	t.Helper()
	if dir := os.Getenv(ScreenshotDirVar); dir != "" && name != "" {
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ScreenshotElement captures the first element matching the CSS selector
// sel as PNG, like Screenshot.
func ScreenshotElement(t *testing.T, ctx context.Context, sel, name string) []byte {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(sel))
	if err != nil {
		t.Fatalf("screenshot of %s: %v", sel, err)
	}
	save(t, name, png)
	return png
}
