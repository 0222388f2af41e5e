package fence

import (
	"fmt"
	"os"
	"strconv"
)

// The environment variables that `baton run` sets for the command it starts,
// as produced by Env and read by FromEnv.
const (
	// EnvName holds the name of the election the command works for.
	EnvName = "BATON_NAME"
	// EnvToken holds the fencing token of the term, in decimal.
	EnvToken = "BATON_TOKEN"
	// EnvPeriod holds the key of the scheduled period being run; empty for
	// a run that belongs to no period.
	EnvPeriod = "BATON_PERIOD"
	// EnvNode holds the id of the node that runs the command.
	EnvNode = "BATON_NODE"
	// EnvTokenSig holds the token's signature (see Key) when baton run
	// was given a fence key; empty otherwise.
	EnvTokenSig = "BATON_TOKEN_SIG"
)

// Env returns the environment entries, as "KEY=value", that hand a fence to
// a child process. All four are present even when period or node is empty,
// so that appending them to os.Environ() for exec.Cmd.Env overrides any
// values the parent itself was started with.
func Env(name string, token uint64, period, node string) []string {
	return []string{
		EnvName + "=" + name,
		EnvToken + "=" + strconv.FormatUint(token, 10),
		EnvPeriod + "=" + period,
		EnvNode + "=" + node,
	}
}

// FromEnv reads the fence handed to this process by `baton run`: the
// election name from EnvName and the token from EnvToken. If either is
// unset or empty, the error wraps ErrNoFence (the process was probably not
// started by baton run); if the token is not a positive decimal uint64, it
// wraps ErrInvalidToken. The period and node, which need no parsing, are
// read with os.Getenv(EnvPeriod) and os.Getenv(EnvNode).
//
// The command passes the token on with every write it makes to a fenced
// resource (CheckTx, SetHeaders); a token in the environment fences
// nothing by itself.
func FromEnv() (name string, token uint64, err error) {
	name = os.Getenv(EnvName)
	if name == "" {
		return "", 0, fmt.Errorf("%w: %s is not set (is this command run by baton run?)", ErrNoFence, EnvName)
	}
	token, err = parseToken(EnvToken, os.Getenv(EnvToken))
	if err != nil {
		return "", 0, err
	}
	return name, token, nil
}

// SigFromEnv returns the token signature handed to this process by baton
// run (EnvTokenSig), empty when baton run has no fence key. Pass it on
// with the token (SetSignedHeaders, CheckSignedTx, pgfence.CheckSigned).
func SigFromEnv() string { return os.Getenv(EnvTokenSig) }
