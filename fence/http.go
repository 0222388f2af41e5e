package fence

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// The request headers that carry a fence, as set by SetHeaders and read by
// Middleware. The token is in decimal.
const (
	HeaderName  = "Baton-Name"
	HeaderToken = "Baton-Token"
	// HeaderSig carries the token's signature (see Key), for a service
	// whose Guard holds a key.
	HeaderSig = "Baton-Token-Sig"
	// HeaderPeriod carries the key of the period the request does, for
	// the fence log of the service's Guard (Guard.SetLog); optional.
	HeaderPeriod = "Baton-Period"
)

// SetHeaders sets the fence headers of req to name and token, replacing any
// that were there.
func SetHeaders(req *http.Request, name string, token uint64) {
	req.Header.Set(HeaderName, name)
	req.Header.Set(HeaderToken, strconv.FormatUint(token, 10))
}

// SetSignedHeaders sets the fence headers of req to name, token and the
// token's signature sig (from baton.Term.SignedToken, or BATON_TOKEN_SIG in
// a command started by baton run with a fence key).
func SetSignedHeaders(req *http.Request, name string, token uint64, sig string) {
	SetHeaders(req, name, token)
	req.Header.Set(HeaderSig, sig)
}

// SetWriteHeaders sets the fence headers of req to w: its name, token,
// signature (when not empty) and period (when not empty), replacing any
// that were there.
func SetWriteHeaders(req *http.Request, w Write) {
	SetHeaders(req, w.Name, w.Token)
	req.Header.Del(HeaderSig)
	req.Header.Del(HeaderPeriod)
	if w.Sig != "" {
		req.Header.Set(HeaderSig, w.Sig)
	}
	if w.Period != "" {
		req.Header.Set(HeaderPeriod, w.Period)
	}
}

// Middleware fences an HTTP service with g. For each request it reads the
// name and token from the HeaderName and HeaderToken headers and serves the
// request with next only if the token is current for the name, as Guard.Do
// does: next runs under g's lock for that name, and g's highest token for
// the name is raised when next returns (whatever status it wrote; a
// handler that panics raises nothing).
//
// A request with a stale token gets 409 Conflict and a one-line body naming
// the name, the token and the highest; next is not called. When g holds a
// key (NewSignedGuard), a request whose HeaderSig is missing or not the
// key's signature of its name and token gets 403 Forbidden, next is not
// called and the highest token is not raised, whatever the token. A request with a
// missing or empty name, or a missing, malformed or zero token, gets 400 Bad
// Request; next is not called.
//
// What it does not guarantee: the check and next's effect are atomic only
// with respect to other requests served through the same Guard in this
// process. Another replica of the service, another Guard, or a path to the
// same data that bypasses this middleware is not fenced by it, and the
// highest tokens are lost when the process restarts. When the effect is a
// write to a database, fence it in the database instead (CheckTx), in the
// same transaction as the write. Without a key the headers are not
// authenticated: a client that sends a token higher than any election has
// issued shuts out the real leader until the election catches up; give the
// Guard a key to refuse such tokens.
//
// Requests for one name are served one at a time, including the time next
// takes; requests for different names are served in parallel. When g
// keeps a fence log (Guard.SetLog), every request served and every one
// refused as stale is logged, with the period of its HeaderPeriod.
func Middleware(g *Guard, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, token, err := fromHeaders(r.Header)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fw := Write{Name: name, Token: token, Sig: r.Header.Get(HeaderSig), Period: r.Header.Get(HeaderPeriod)}
		err = g.DoWrite(fw, func() error {
			next.ServeHTTP(w, r)
			return nil
		})
		switch {
		case err == nil:
		case errors.Is(err, ErrStaleToken):
			http.Error(w, err.Error(), http.StatusConflict)
		case errors.Is(err, ErrBadSignature):
			http.Error(w, err.Error(), http.StatusForbidden)
		default:
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	})
}

// fromHeaders reads a fence from request headers.
func fromHeaders(h http.Header) (string, uint64, error) {
	name := h.Get(HeaderName)
	if name == "" {
		return "", 0, fmt.Errorf("%w: header %s is missing or empty", ErrNoFence, HeaderName)
	}
	token, err := parseToken("header "+HeaderToken, h.Get(HeaderToken))
	if err != nil {
		return "", 0, err
	}
	return name, token, nil
}
