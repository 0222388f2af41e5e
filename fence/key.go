package fence

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/batonhq/baton/internal/bound"
)

// ErrBadSignature is returned when a resource that holds a Key is sent a
// token without a signature, or with one that the key did not make: a
// forged or altered token. Nothing was checked, raised or applied.
var ErrBadSignature = errors.New("fencing token signature missing or invalid")

// ErrKeyFileExposed is returned by ReadKeyFile for a key file that users
// other than its owner and its group can read or write, or that its group
// can write: whoever reads the key can sign a forged high token. The key
// was not used.
var ErrKeyFileExposed = errors.New("key file open to other users")

// MinKeyLen is the shortest key NewKey accepts, in bytes.
const MinKeyLen = 16

// Key authenticates fencing tokens. The election side (baton run, or a
// program holding a baton.Term) signs each token with it; a resource given
// the same key accepts only tokens whose signature is valid, so that a
// client that is not a leader cannot send a forged high token and shut out
// the real leader (see the package doc).
//
// A signature is the HMAC-SHA256, under the key, of the name and the token,
// in lower-case hexadecimal. It proves that whoever holds the key issued
// (name, token); it does not prove that the token is current: the fence
// still compares tokens.
type Key struct{ secret []byte }

// NewKey returns a key with secret, which must have at least MinKeyLen
// bytes (32 random bytes are the usual choice: head -c 32 /dev/urandom |
// xxd -p -c 64). A shorter secret is an error wrapping ErrInvalidToken and
// a *baton.OptionError naming key.
func NewKey(secret []byte) (*Key, error) {
	if len(secret) < MinKeyLen {
		return nil, fmt.Errorf("fence: NewKey: %w: %w", ErrInvalidToken,
			bound.Errorf("key", fmt.Sprintf("of %d bytes", len(secret)), "at least %d random bytes", MinKeyLen))
	}
	return &Key{secret: append([]byte(nil), secret...)}, nil
}

// ParseKey returns the key written in hexadecimal in s (surrounding white
// space ignored), as in a key file.
func ParseKey(s string) (*Key, error) {
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("fence: ParseKey: the key is not hexadecimal; write %d or more random bytes in hex (e.g. head -c 32 /dev/urandom | xxd -p -c 64)", MinKeyLen)
	}
	return NewKey(b)
}

// ReadKeyFile returns the key in the file at path (hexadecimal, see
// ParseKey). As ssh does with a private key, it refuses, with an error
// wrapping ErrKeyFileExposed that names the fix (chmod 600), a file that
// other users can read or write or that its group can write (any mode
// bit in 0027): keep it readable by its owner only (0600), or by its
// group too (0640) to share it with a service's group. On Windows, where
// the mode bits do not describe who may read a file, the mode is not
// checked.
func ReadKeyFile(path string) (*Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("fence: reading the key: %w", err)
	}
	defer f.Close()
	if runtime.GOOS != "windows" {
		fi, err := f.Stat()
		if err != nil {
			return nil, fmt.Errorf("fence: reading the key: %w", err)
		}
		if err := checkKeyMode(path, fi.Mode().Perm()); err != nil {
			return nil, err
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<16))
	if err != nil {
		return nil, fmt.Errorf("fence: reading the key: %w", err)
	}
	k, err := ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// checkKeyMode refuses the permissions of a key file that others may
// read or write (see ReadKeyFile).
func checkKeyMode(path string, perm os.FileMode) error {
	if perm&0o027 == 0 {
		return nil
	}
	var what []string
	if perm&0o004 != 0 {
		what = append(what, "readable by every user")
	}
	if perm&0o002 != 0 {
		what = append(what, "writable by every user")
	}
	if perm&0o020 != 0 {
		what = append(what, "writable by its group")
	}
	if len(what) == 0 {
		what = append(what, "open to every user")
	}
	return fmt.Errorf("fence: %w: %s is %s (mode %04o), and whoever reads it can sign tokens that lock the leader out; chmod 600 %s (640 to share it with its group), and make a new key if others may have read this one",
		ErrKeyFileExposed, path, strings.Join(what, " and "), perm, path)
}

// Secret returns a copy of the key's secret bytes, for installing the key
// in a resource that verifies signatures itself (pgfence.Install puts it
// in the database). Keep it as secret as the key file.
func (k *Key) Secret() []byte { return append([]byte(nil), k.secret...) }

// Sign returns the signature of token for name.
func (k *Key) Sign(name string, token uint64) string {
	m := hmac.New(sha256.New, k.secret)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(name)))
	m.Write(n[:])
	m.Write([]byte(name))
	binary.BigEndian.PutUint64(n[:], token)
	m.Write(n[:])
	return hex.EncodeToString(m.Sum(nil))
}

// Verify returns nil if sig is the signature of token for name, and an
// error wrapping ErrBadSignature otherwise. The comparison takes the same
// time whatever the signature.
func (k *Key) Verify(name string, token uint64, sig string) error {
	if sig == "" {
		return fmt.Errorf("%w: token %d for %q carries no signature", ErrBadSignature, token, name)
	}
	want := k.Sign(name, token)
	if !hmac.Equal([]byte(want), []byte(strings.ToLower(sig))) {
		return fmt.Errorf("%w: token %d for %q is not signed by this resource's key", ErrBadSignature, token, name)
	}
	return nil
}

// verify checks sig with k when k is set; a resource without a key accepts
// any token, signed or not.
func verify(k *Key, name string, token uint64, sig string) error {
	if k == nil {
		return nil
	}
	return k.Verify(name, token, sig)
}
