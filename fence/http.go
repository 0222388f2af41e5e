package fence

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
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
// Request; next is not called. So does a request whose fence headers can
// be read more than one way (ReadHeaders): repeated, comma-joined, named
// in Connection or Trailer, spelt with '_', or a token not in canonical
// decimal.
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
		fw, err := fromHeaders(r.Header)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
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

// fromHeaders reads a fence from request headers (ReadHeaders), which
// must hold a name and a token.
func fromHeaders(h http.Header) (Write, error) {
	w, err := ReadHeaders(h)
	switch {
	case err != nil:
		return Write{}, err
	case w.Name == "":
		return Write{}, fmt.Errorf("%w: header %s is missing or empty", ErrNoFence, HeaderName)
	case w.Token == 0:
		return Write{}, fmt.Errorf("%w: header %s is missing or empty", ErrNoFence, HeaderToken)
	}
	return w, nil
}

// fenceHeaders are the request headers that carry a fence.
var fenceHeaders = [...]string{HeaderName, HeaderToken, HeaderSig, HeaderPeriod}

// ReadHeaders reads the fence of an HTTP request from its headers h,
// refusing whatever two servers could read differently, so that the
// fence a server checks is the one every later reader of the request
// sees. It returns an error wrapping ErrAmbiguousFence when one of the
// fence headers (HeaderName, HeaderToken, HeaderSig, HeaderPeriod)
//
//   - has more than one value: repeated lines, in any case, or values
//     joined by a comma (so a name holding a comma cannot be sent);
//   - is named in the Connection header, which makes it hop-by-hop: a
//     proxy would check it and then drop it; or in the Trailer header,
//     which announces a second value after the body;
//   - has a look-alike, a header whose name differs from it only in case
//     and by '_' for '-' (Baton_Token), which CGI-style servers map to
//     the same variable;
//
// and an error wrapping ErrInvalidToken for a HeaderToken that is not a
// token in canonical decimal (no sign, no leading zero, no space, within
// uint64) or is 0. A missing or empty header is not an error: its field
// of the Write is empty (Token 0), for the caller to refuse or default.
func ReadHeaders(h http.Header) (Write, error) {
	for _, c := range h.Values("Connection") {
		for _, opt := range strings.Split(c, ",") {
			opt = strings.TrimSpace(opt)
			if f, ok := fenceHeader(opt); ok {
				return Write{}, fmt.Errorf("%w: header Connection names %s (as %q): a proxy would check it and then drop it; send the fence headers end to end", ErrAmbiguousFence, f, opt)
			}
		}
	}
	for _, c := range h.Values("Trailer") {
		for _, opt := range strings.Split(c, ",") {
			opt = strings.TrimSpace(opt)
			if f, ok := fenceHeader(opt); ok {
				return Write{}, fmt.Errorf("%w: header Trailer names %s (as %q): a second value could follow the body; send the fence headers before it only", ErrAmbiguousFence, f, opt)
			}
		}
	}
	for k, vs := range h {
		f, ok := fenceHeader(k)
		switch {
		case !ok:
		case k != f:
			return Write{}, fmt.Errorf("%w: header %q looks like %s, which some servers read as the same header; send %s only", ErrAmbiguousFence, k, f, f)
		case len(vs) > 1:
			return Write{}, fmt.Errorf("%w: header %s is given %d times; send it once", ErrAmbiguousFence, f, len(vs))
		case strings.Contains(vs[0], ","):
			return Write{}, fmt.Errorf("%w: header %s %q holds a comma, which joins repeated values; send one value", ErrAmbiguousFence, f, vs[0])
		}
	}
	w := Write{Name: h.Get(HeaderName), Sig: h.Get(HeaderSig), Period: h.Get(HeaderPeriod)}
	if raw := h.Get(HeaderToken); raw != "" {
		t, err := parseToken("header "+HeaderToken, raw)
		if err != nil {
			return Write{}, err
		}
		if c := strconv.FormatUint(t, 10); c != raw {
			return Write{}, fmt.Errorf("%w: header %s %q is not in canonical decimal (no sign, leading zero or space); send %s", ErrInvalidToken, HeaderToken, raw, c)
		}
		w.Token = t
	}
	return w, nil
}

// fenceHeader reports which fence header the header name k is or looks
// like: equal to it but for case and '_' for '-'.
func fenceHeader(k string) (string, bool) {
	n := strings.ReplaceAll(k, "_", "-")
	for _, f := range fenceHeaders {
		if strings.EqualFold(n, f) {
			return f, true
		}
	}
	return "", false
}
