package main

import (
	"flag"
	"os"

	"github.com/batonhq/baton/fence"
)

// fenceKeyFlag is baton run's --fence-key-file: the key that signs the
// fencing tokens handed to the command (BATON_TOKEN_SIG), for resources
// that authenticate tokens (see package fence).
type fenceKeyFlag struct {
	path string
	key  *fence.Key
}

// registerFenceKey registers --fence-key-file on fs.
func registerFenceKey(fs *flag.FlagSet) *fenceKeyFlag {
	k := &fenceKeyFlag{}
	fs.StringVar(&k.path, "fence-key-file", "", "sign each fencing token with the hex key in `PATH` and hand the signature to COMMAND as BATON_TOKEN_SIG, for resources that accept signed tokens only (see package fence); also $BATON_FENCE_KEY_FILE")
	return k
}

// load reads the key file named by the flag or $BATON_FENCE_KEY_FILE; with
// neither, tokens are not signed.
func (k *fenceKeyFlag) load() error {
	if k.path == "" {
		k.path = os.Getenv("BATON_FENCE_KEY_FILE")
	}
	if k.path == "" {
		return nil
	}
	key, err := fence.ReadKeyFile(k.path)
	if err != nil {
		return usagef("invalid --fence-key-file: %v", err)
	}
	k.key = key
	return nil
}

// env returns BATON_TOKEN_SIG for name and token, always present (empty
// without a key) so that it overrides any value in baton's own environment.
func (k *fenceKeyFlag) env(name string, token uint64) []string {
	if k == nil || k.key == nil {
		return []string{fence.EnvTokenSig + "="}
	}
	return []string{fence.EnvTokenSig + "=" + k.key.Sign(name, token)}
}
