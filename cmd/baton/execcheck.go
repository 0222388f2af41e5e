package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
)

// checkCommand returns a usage error unless the kernel would start name
// (COMMAND of 'baton run'), so that baton refuses it before campaigning
// rather than take a token, fail to start it and give the lease back.
//
// The rule: name is found (on $PATH unless it holds a slash), it is a
// regular file that this user may execute, and it is a program: it starts
// with "#!" naming an interpreter that is itself an executable file, or
// with the magic number of an executable binary (ELF; Mach-O on macOS).
// An interpreter is checked as a file, not looked inside. A
// file baton may execute but not read is let through: only the kernel can
// tell. Other formats that a Linux host may have registered with
// binfmt_misc (a .jar, a Windows .exe) are refused: run them through their
// interpreter (-- java -jar app.jar).
func checkCommand(name string) error {
	path, err := exec.LookPath(name)
	if err != nil {
		var ee *exec.Error
		switch {
		case errors.As(err, &ee) && errors.Is(ee.Err, fs.ErrPermission):
			return usagef("command %q cannot be run: it is not executable by this user (chmod +x it, or run it through its interpreter, e.g. -- sh %s)", name, name)
		case errors.As(err, &ee) && errors.Is(ee.Err, syscall.EISDIR):
			return usagef("command %q cannot be run: it is a directory, not a program", name)
		}
		return usagef("command %q not found: %v", name, errors.Unwrap(err))
	}
	fi, err := os.Stat(path)
	if err != nil {
		return usagef("command %q cannot be run: %v", name, err)
	}
	if !fi.Mode().IsRegular() {
		return usagef("command %q cannot be run: %s is not a regular file (%v)", name, path, fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil // executable but unreadable: the kernel may still start it
	}
	defer f.Close()
	head := make([]byte, 4)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil // as above: baton cannot look inside
	}
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("#!")):
		return checkInterpreter(name, path, f)
	case isBinary(head):
		return nil
	case n == 0:
		return usagef("command %q cannot be run: %s is an empty file, not a program", name, path)
	}
	return usagef("command %q cannot be run: %s is not a program (it starts with %q, neither \"#!\" nor an executable binary's magic number); if it is a script, give it a #! line or run it through its interpreter (-- sh %s)",
		name, path, head, path)
}

// checkInterpreter checks the interpreter named by the "#!" line of the
// script at path, read from f (positioned after its first 4 bytes).
func checkInterpreter(name, path string, f *os.File) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil
	}
	line, err := bufio.NewReader(io.LimitReader(f, 256)).ReadString('\n')
	if err != nil && err != io.EOF {
		return nil
	}
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(fields) == 0 {
		return usagef("command %q cannot be run: the script %s names no interpreter after \"#!\"", name, path)
	}
	interp := fields[0]
	fi, err := os.Stat(interp)
	switch {
	case err != nil:
		return usagef("command %q cannot be run: the interpreter %q of the script %s: %v", name, interp, path, errors.Unwrap(err))
	case !fi.Mode().IsRegular():
		return usagef("command %q cannot be run: the interpreter %q of the script %s is not a regular file", name, interp, path)
	}
	if !strings.Contains(interp, "/") {
		interp = "./" + interp // the kernel reads it as a path, not a $PATH name
	}
	if _, err := exec.LookPath(interp); err != nil {
		return usagef("command %q cannot be run: the interpreter %q of the script %s is not executable by this user", name, interp, path)
	}
	return nil
}

// isBinary reports whether head starts with the magic number of the
// executable binary format of this operating system: Mach-O (thin or
// universal, either byte order) on macOS, ELF elsewhere.
func isBinary(head []byte) bool {
	if len(head) < 4 {
		return false
	}
	if runtime.GOOS != "darwin" {
		return bytes.Equal(head, []byte("\x7fELF"))
	}
	for _, m := range [][]byte{
		{0xfe, 0xed, 0xfa, 0xce}, {0xce, 0xfa, 0xed, 0xfe}, // Mach-O 32-bit
		{0xfe, 0xed, 0xfa, 0xcf}, {0xcf, 0xfa, 0xed, 0xfe}, // Mach-O 64-bit
		{0xca, 0xfe, 0xba, 0xbe}, {0xbe, 0xba, 0xfe, 0xca}, // universal
	} {
		if bytes.Equal(head, m) {
			return true
		}
	}
	return false
}
