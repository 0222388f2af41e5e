package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/schedule"
)

// authorized checks the admin token in constant time (of the token's
// SHA-256, so its length does not leak either).
func (s *server) authorized(r *http.Request) (bool, string) {
	if !s.admin {
		return false, "actions are disabled: start baton serve with --admin-token-file PATH (or $BATON_ADMIN_TOKEN)"
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	h := sha256.Sum256([]byte(got))
	if !ok || subtle.ConstantTimeCompare(h[:], s.adminHash[:]) != 1 {
		return false, "missing or wrong admin token: send it as the header \"Authorization: Bearer TOKEN\""
	}
	return true, ""
}

func (s *server) handleAction(w http.ResponseWriter, r *http.Request) {
	if ok, why := s.authorized(r); !ok {
		jsonError(w, http.StatusForbidden, why)
		return
	}
	name, action := r.PathValue("name"), r.PathValue("action")
	q := r.URL.Query()
	ctx := r.Context()
	switch action {
	case "trigger":
		key := q.Get("period")
		if key == "" {
			key = schedule.Key(time.Now())
		} else if _, err := schedule.ParseKey(key); err != nil {
			jsonError(w, http.StatusBadRequest, "invalid period: "+err.Error())
			return
		}
		if err := scheduled(ctx, s.st, name); err != nil {
			jsonError(w, http.StatusNotFound, err.Error()+"; nothing written")
			return
		}
		run, _, err := schedule.Trigger(ctx, s.st, name, key)
		if err != nil {
			jsonError(w, http.StatusConflict, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"job": name, "period": key, "state": run.State})
	case "resign", "transfer":
		to := q.Get("to")
		if action == "transfer" && to == "" {
			jsonError(w, http.StatusBadRequest, "transfer needs ?to=NODE")
			return
		}
		var tok uint64
		if t := q.Get("token"); t != "" {
			v, err := strconv.ParseUint(t, 10, 64)
			if err != nil {
				jsonError(w, http.StatusBadRequest, "invalid token "+strconv.Quote(t)+"; want a decimal fencing token")
				return
			}
			tok = v
		} else {
			rec, err := s.st.Get(ctx, name)
			if err != nil {
				jsonError(w, http.StatusNotFound, err.Error())
				return
			}
			tok = rec.Token
		}
		var err error
		if action == "transfer" {
			// As 'baton transfer': a target that does not campaign would
			// leave the name leaderless until the lease runs out.
			if err := campaigning(ctx, s.st, name, to); errors.Is(err, errNotWaiting) {
				jsonError(w, http.StatusConflict, err.Error())
				return
			} else if err != nil {
				jsonError(w, http.StatusServiceUnavailable, err.Error())
				return
			}
			err = baton.Transfer(ctx, s.st, name, to, tok)
		} else {
			err = baton.RequestResign(ctx, s.st, name, tok)
		}
		switch {
		case errors.Is(err, baton.ErrStaleToken), errors.Is(err, baton.ErrTokenAhead), errors.Is(err, baton.ErrNotLeader):
			jsonError(w, http.StatusConflict, "refused: "+err.Error())
		case err != nil:
			jsonError(w, http.StatusServiceUnavailable, err.Error())
		default:
			writeJSON(w, http.StatusOK, map[string]any{"name": name, "action": action, "token": tok, "to": to})
		}
	default:
		jsonError(w, http.StatusNotFound, "unknown action "+strconv.Quote(action)+"; want trigger, resign or transfer")
	}
}
