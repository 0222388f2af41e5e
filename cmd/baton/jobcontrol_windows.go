//go:build windows

package main

import "log/slog"

// holdJobControl does nothing on Windows: it has no job-control signals.
func holdJobControl(log *slog.Logger) (restore func()) { return func() {} }
