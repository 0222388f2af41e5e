package baton_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

var errGone = fmt.Errorf("test store: %w: the file was deleted", store.ErrReplaced)

// A leader whose store is replaced ends its term at its next renewal, long
// before its deadline, with a cause that says so; Run returns that error
// instead of campaigning again, and the log says why.
func TestStoreReplacedEndsTermAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		var logs bytes.Buffer
		e := newElector(t, st.Client("a"), "a", baton.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		var term *baton.Term
		var replaced time.Time
		err := e.Run(t.Context(), func(ctx context.Context, tm *baton.Term) error {
			term = tm
			time.Sleep(renew / 2)
			st.SetError("a", errGone)
			replaced = time.Now()
			<-ctx.Done()
			return nil
		})
		if !errors.Is(err, baton.ErrStoreLost) || !errors.Is(err, store.ErrReplaced) {
			t.Fatalf("Run: %v, want ErrStoreLost wrapping store.ErrReplaced", err)
		}
		if !errors.Is(term.Err(), baton.ErrStoreLost) || term.Valid() {
			t.Fatalf("term: cause %v, valid %v", term.Err(), term.Valid())
		}
		if got := time.Since(replaced); got > renew {
			t.Errorf("the term ended %v after the store was replaced, want by the next renewal (%v)", got, renew)
		}
		if !strings.Contains(logs.String(), "store failed for good") || !strings.Contains(logs.String(), "deleted") {
			t.Errorf("the log does not say why the leader stepped down:\n%s", logs.String())
		}
		rec, _ := st.Get(context.Background(), "billing")
		if rec.Free() {
			t.Errorf("the leader released a record on a store it could not trust")
		}
	})
}

// A contender whose store is corrupt stops campaigning with the store's
// error; a transient error keeps it trying.
func TestCampaignStopsOnPermanentError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		st.SetError("a", fmt.Errorf("test store: %w: database disk image is malformed", store.ErrCorrupt))
		e := newElector(t, st.Client("a"), "a")
		_, err := e.Campaign(t.Context())
		if !errors.Is(err, baton.ErrStoreLost) || !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("Campaign: %v, want ErrStoreLost wrapping store.ErrCorrupt", err)
		}

		st.SetError("a", nil)
		st.SetUnreachable("a", true)
		res := campaign(t.Context(), e)
		time.Sleep(10 * poll)
		select {
		case r := <-res:
			t.Fatalf("Campaign returned on a transient error: %v", r.Err)
		default:
		}
		st.SetUnreachable("a", false)
		if r := <-res; r.Err != nil {
			t.Fatalf("Campaign after the store came back: %v", r.Err)
		}
	})
}

// After a restore, the token floor makes the next term's token higher than
// any the lost store handed out; it never lowers a token.
func TestRaiseTokenFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New() // the restored store: it never saw tokens above 0
		rec, err := baton.RaiseTokenFloor(t.Context(), st, "billing", 41)
		if err != nil || rec.Token != 41 || !rec.Free() {
			t.Fatalf("RaiseTokenFloor: %+v, %v", rec, err)
		}
		term := mustCampaign(t, newElector(t, st, "a"))
		if term.Token() != 42 {
			t.Fatalf("token after the floor 41: %d, want 42", term.Token())
		}
		// A lower floor changes nothing; a floor under a leader deposes it.
		if rec, err := baton.RaiseTokenFloor(t.Context(), st, "billing", 10); err != nil || rec.Token != 42 {
			t.Fatalf("lower floor: %+v, %v", rec, err)
		}
		if _, err := baton.RaiseTokenFloor(t.Context(), st, "billing", 100); err != nil {
			t.Fatal(err)
		}
		<-term.Done()
		if !errors.Is(term.Err(), baton.ErrDeposed) {
			t.Fatalf("leader under a raised floor: %v, want ErrDeposed", term.Err())
		}
		evs, _ := st.History(t.Context(), "billing", 0, 0)
		if len(evs) == 0 || evs[0].Kind != store.FloorRaised {
			t.Fatalf("history %+v, want the floor first", evs)
		}
	})
}

// The largest floor leaves room for the next term's token; one above it
// is refused and writes nothing; a store at the largest token ends the
// campaign with ErrStoreLost (it never heals) instead of retrying.
func TestTokenFloorMaximum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		if _, err := baton.RaiseTokenFloor(t.Context(), st, "over", baton.MaxTokenFloor+1); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("floor above MaxTokenFloor: %v, want ErrInvalid", err)
		}
		if _, err := st.Get(t.Context(), "over"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the refused floor wrote a record: %v", err)
		}
		if _, err := baton.RaiseTokenFloor(t.Context(), st, "billing", baton.MaxTokenFloor); err != nil {
			t.Fatal(err)
		}
		term := mustCampaign(t, newElector(t, st, "a"))
		if term.Token() != store.MaxToken {
			t.Fatalf("token after the largest floor: %d, want %d", term.Token(), uint64(store.MaxToken))
		}
		if err := term.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		_, err := newElector(t, st, "b").Campaign(t.Context())
		if !errors.Is(err, baton.ErrStoreLost) || !errors.Is(err, store.ErrTokenLimit) {
			t.Fatalf("Campaign on a name at the largest token: %v, want ErrStoreLost wrapping ErrTokenLimit", err)
		}
	})
}
