//go:build !unix

package testenv

import "os"

// openTTY returns nil: the report goes to the terminal on Unix only.
func openTTY() *os.File { return nil }
