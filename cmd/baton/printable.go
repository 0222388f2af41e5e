package main

import "github.com/batonhq/baton/internal/inspect"

// printable escapes what a store provided before it reaches a terminal
// (inspect.Printable).
func printable(s string) string { return inspect.Printable(s) }
