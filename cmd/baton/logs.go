package main

import (
	"flag"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/batonhq/baton/store/storeurl"
)

// logConfig is the --log-format and --log-level of a long-running command.
type logConfig struct {
	format string
	level  string
	lvl    slog.Level
}

func (c *logConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.format, "log-format", "text", "log line format on standard error: text (key=value) or json (one object a line)")
	fs.StringVar(&c.level, "log-level", "info", "least severe level logged: debug, info, warn or error")
}

// check validates the flags.
func (c *logConfig) check() error {
	if c.format != "text" && c.format != "json" {
		return usagef("invalid --log-format %q; want text or json", c.format)
	}
	if err := c.lvl.UnmarshalText([]byte(c.level)); err != nil || strings.ContainsAny(c.level, "+-") {
		return usagef("invalid --log-level %q; want debug, info, warn or error", c.level)
	}
	return nil
}

// logger returns the logger the flags describe, writing to w.
func (c *logConfig) logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.lvl}
	if c.format == "json" {
		// Durations as "1.5s", as in the text format and the flags, not
		// as nanoseconds.
		opts.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				a.Value = slog.StringValue(a.Value.Duration().String())
			}
			return a
		}
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// describeStore returns the store URL for a log line: url resolved as
// openStore does (the environment, the default), a file path (a scheme
// registered with storedriver.Scheme.Path: SQLite's) made
// absolute (a relative default is a trap when two processes run from two
// directories), and a password replaced by storeurl.Redacted.
func describeStore(url string) string {
	url, err := resolveStoreURL(url)
	if err != nil {
		return "(unreadable store URL)"
	}
	if s, ok := storeurl.Lookup(url); ok && s.Path {
		scheme, rest, _ := strings.Cut(url, ":")
		if abs, err := filepath.Abs(rest); err == nil {
			return scheme + ":" + abs
		}
	}
	return storeurl.Redact(url)
}
