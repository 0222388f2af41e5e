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

// New starts a headless Chromium with a fresh profile in a temporary
// directory and returns a chromedp context for one tab, bounded by timeout.
// The browser is stopped when the test ends.
func New(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	bin := testenv.Chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(t.TempDir()),
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
	ctx, cancelTab := chromedp.NewContext(actx)
	tctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
	})
	// Start the browser now, so that a broken installation fails here with
	// a clear message rather than in the middle of a test.
	if err := chromedp.Do(tctx); err != nil {
		testenv.Require(t, "chromium", fmt.Sprintf("chromium at %s does not start: %v", bin, err))
	}
	return tctx
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
