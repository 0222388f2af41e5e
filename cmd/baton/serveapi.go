package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/batonhq/baton/internal/inspect"
)

// read reads one name, carrying its observation across requests. Reads
// are serialized: the observation is per server.
func (s *server) read(ctx context.Context, name string) (jobDetail, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.watches[name]
	if w == nil {
		w = &watch{}
		s.watches[name] = w
	}
	return readJob(ctx, s.st, name, w, time.Now())
}

// jobRow is one name of a page of GET /api/jobs and of the page's table:
// its record and its state, without the per-name reads of the detail.
type jobRow struct {
	Name        string        `json:"name"`
	Holder      string        `json:"holder,omitempty"`
	Incarnation string        `json:"incarnation,omitempty"`
	Token       uint64        `json:"token"`
	Session     string        `json:"session,omitempty"`
	Transfer    string        `json:"transfer,omitempty"`
	Updated     *time.Time    `json:"updated,omitempty"`
	State       inspect.State `json:"state"`
}

// jobPage is GET /api/jobs.
type jobPage struct {
	Jobs []jobRow `json:"jobs"`
	// Next is the cursor of the next page: pass it as ?cursor=; empty
	// when this page is the last.
	Next string `json:"next"`
	// Scanned is how many names were read for this page (more than
	// len(Jobs) when a filter left some out).
	Scanned int `json:"scanned"`
}

// listQuery reads a listing's query parameters.
func listQuery(r *http.Request) (inspect.ListQuery, error) {
	v := r.URL.Query()
	q := inspect.ListQuery{After: v.Get("cursor"), Prefix: v.Get("prefix"), Holder: v.Get("holder"),
		Session: v.Get("session"), State: v.Get("state")}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > inspect.MaxLimit {
			return q, fmt.Errorf("invalid limit %q; want 1 to %d, or leave limit out for pages of %d", l, inspect.MaxLimit, inspect.DefaultLimit)
		}
		q.Limit = n
	}
	return q, q.Check()
}

// listPage reads one page of names with their states.
func (s *server) listPage(ctx context.Context, q inspect.ListQuery) (jobPage, error) {
	now, err := inspect.StoreNow(ctx, s.st, time.Now())
	if err != nil {
		return jobPage{}, err
	}
	p, err := inspect.List(ctx, s.st, s.names(), q, now)
	if err != nil {
		return jobPage{}, err
	}
	out := jobPage{Jobs: make([]jobRow, 0, len(p.Entries)), Next: p.Next, Scanned: p.Scanned}
	for _, e := range p.Entries {
		row := jobRow{Name: e.Name, State: e.State, Token: e.State.Token}
		if r := e.Record; r != nil {
			u := r.Updated.UTC()
			row.Holder, row.Incarnation, row.Session, row.Transfer, row.Updated = r.Holder, r.Incarnation, r.Session, r.Transfer, &u
		}
		out.Jobs = append(out.Jobs, row)
	}
	return out, nil
}

// summary counts the names, at most maxAge ago (or a few times as long
// as counting takes): counting is one grouped query over every name, so
// the page's refresh and the API answer from the last count while it is
// fresh enough, and count again in the background once it is half that
// old. Only the first request waits for a count.
func (s *server) summary(ctx context.Context, maxAge time.Duration) (inspect.Summary, time.Time, error) {
	s.sumMu.Lock()
	fresh := max(maxAge, 10*s.sumTook)
	age := time.Since(s.sumAt)
	if !s.sumAt.IsZero() && age < fresh {
		if age > fresh/2 && !s.sumBusy {
			s.sumBusy = true
			go s.count(context.WithoutCancel(ctx))
		}
		sum, at := s.sum, s.sumAt
		s.sumMu.Unlock()
		return sum, at, nil
	}
	s.sumMu.Unlock()
	return s.count(ctx)
}

// count counts the names and keeps the count.
func (s *server) count(ctx context.Context) (inspect.Summary, time.Time, error) {
	defer func() {
		s.sumMu.Lock()
		s.sumBusy = false
		s.sumMu.Unlock()
	}()
	start := time.Now()
	now, err := inspect.StoreNow(ctx, s.st, start)
	if err != nil {
		return inspect.Summary{}, time.Time{}, err
	}
	var sum inspect.Summary
	if names := s.names(); names != nil {
		p, err := inspect.List(ctx, s.st, names, inspect.ListQuery{Limit: inspect.MaxLimit}, now)
		if err != nil {
			return sum, time.Time{}, err
		}
		sum = summarizeEntries(p.Entries)
	} else if sum, err = inspect.Summarize(ctx, s.st, now); err != nil {
		return sum, time.Time{}, err
	}
	sum.CountedAt = start.UTC()
	s.sumMu.Lock()
	s.sum, s.sumAt, s.sumTook = sum, start, time.Since(start)
	s.sumMu.Unlock()
	return sum, start, nil
}

// summarizeEntries counts the names given to serve by state.
func summarizeEntries(es []inspect.Entry) inspect.Summary {
	sum := inspect.Summary{States: map[string]int{}, Read: "read"}
	for _, st := range inspect.States {
		sum.States[st] = 0
	}
	for _, e := range es {
		sum.Names++
		sum.States[e.State.State]++
	}
	return sum
}

func (s *server) handleList(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r)
	if err != nil {
		jsonError(w, http.StatusBadRequest, err.Error())
		return
	}
	p, err := s.listPage(r.Context(), q)
	if err != nil {
		jsonError(w, http.StatusServiceUnavailable, readErr(s.storeLabel, err).Error())
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *server) handleSummary(w http.ResponseWriter, r *http.Request) {
	sum, _, err := s.summary(r.Context(), s.refresh)
	if err != nil {
		jsonError(w, http.StatusServiceUnavailable, readErr(s.storeLabel, err).Error())
		return
	}
	writeJSON(w, http.StatusOK, sum)
}

func (s *server) handleJob(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	d, err := s.read(r.Context(), name)
	if err != nil {
		jsonError(w, http.StatusServiceUnavailable, readErr(s.storeLabel, err).Error())
		return
	}
	if d.Updated == nil && len(d.Runs) == 0 && len(d.History) == 0 {
		jsonError(w, http.StatusNotFound, fmt.Sprintf("%s: no election record and no runs in this store", name))
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func jsonError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}
