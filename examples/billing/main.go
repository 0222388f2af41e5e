// Command billing is an example of baton on PostgreSQL: an end-of-day
// billing job that runs on exactly one node of a cluster and bills every
// seller-day exactly once.
//
// Run one copy per node, all with the same --store. The nodes elect a
// leader through baton's election record in the database; the leader runs
// the job once per period (--every, default a day), and the next leader
// catches up the periods that came due while nobody led. For each period
// it writes every seller's invoice lines for the period that just ended,
// in one transaction of its own that also:
//
//   - checks the term's fencing token with pgfence.Check, so that the lines
//     of a leader that was deposed (paused, cut off, too slow) are refused
//     and rolled back once a newer leader has written;
//   - inserts under a unique (seller, day, line) key with ON CONFLICT DO
//     NOTHING, so that a period run again by a new leader, because the old
//     leader committed the lines but died before the run ledger recorded
//     the run, writes nothing twice.
//
// The election alone could not give this: a leader can pause after
// checking that it still leads, and write later. The fence in the
// database's own transaction is what stops its write.
//
// Usage:
//
//	billing --store postgres://USER@HOST/DB?schema=baton [--db URL] [--node ID] [--every 24h] [--lease 15s]
//
// The tables (sales, invoice_line and pgfence's baton_fence) are created in
// the database given by --db, by default the store's database. See
// docs/production.md (PostgreSQL) for a walk-through.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/fence/pgfence"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/postgres"
)

// jobName is the job's name, and the name of its election and its fence.
const jobName = "billing"

// schemaSQL creates the application's tables. A sale belongs to the day in
// which it was sold; a day's invoice lines are keyed by seller, day (the
// period key: the instant the day closed) and line number.
const schemaSQL = `
CREATE TABLE IF NOT EXISTS sales (
	id           bigserial PRIMARY KEY,
	seller       text NOT NULL,
	amount_cents bigint NOT NULL,
	sold_at      timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS invoice_line (
	seller       text NOT NULL,
	day          text NOT NULL,
	line         int NOT NULL,
	description  text NOT NULL,
	amount_cents bigint NOT NULL,
	token        bigint NOT NULL,
	PRIMARY KEY (seller, day, line));`

// billSQL writes the invoice lines of one day: per seller with sales in
// [$2, $3), line 1 the sales and line 2 a 5% commission, under token $4.
// Lines that exist already are left alone.
const billSQL = `
WITH sold AS (
	SELECT seller, sum(amount_cents)::bigint AS total FROM sales
	WHERE sold_at >= $2::timestamptz AND sold_at < $3::timestamptz GROUP BY seller)
INSERT INTO invoice_line (seller, day, line, description, amount_cents, token)
SELECT seller, $1::text, 1, 'sales', total, $4::bigint FROM sold
UNION ALL
SELECT seller, $1::text, 2, 'commission 5%', -(total * 5 / 100), $4::bigint FROM sold
ON CONFLICT (seller, day, line) DO NOTHING`

// config is the validated command line.
type config struct {
	store, db, node      string
	every, offset, lease time.Duration
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(realMain(ctx, os.Args[1:], os.Stderr))
}

// realMain parses args, runs until ctx ends, and returns the exit status:
// 0 after a clean stop, 1 when the job could not run, 2 for bad usage.
func realMain(ctx context.Context, args []string, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "billing:", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	err = run(ctx, cfg, logger)
	if ctx.Err() != nil {
		logger.Info("stopped (a lease this node held was released)")
		return 0
	}
	fmt.Fprintln(stderr, "billing:", err)
	return 1
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("billing", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.store, "store", os.Getenv("BATON_STORE"), "baton store URL, postgres://USER@HOST/DB?schema=baton (default $BATON_STORE)")
	fs.StringVar(&c.db, "db", "", "URL of the database with the sales and invoice lines (default: the store's database)")
	fs.StringVar(&c.node, "node", "", "this node's id (default: host name and process id)")
	fs.DurationVar(&c.every, "every", 24*time.Hour, "length of a billing day, whole seconds; days are aligned to the Unix epoch (UTC midnight for 24h)")
	fs.DurationVar(&c.offset, "offset", 0, "shift the end of each day by this much, in [0, --every)")
	fs.DurationVar(&c.lease, "lease", baton.DefaultLease, "leader lease; a dead leader is replaced after about this long")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.store == "" {
		return c, errors.New("--store is required (or set BATON_STORE): postgres://USER@HOST/DB?schema=baton")
	}
	if c.db == "" {
		u, err := url.Parse(c.store)
		if err != nil {
			return c, fmt.Errorf("--store: %v", errors.Unwrap(err))
		}
		q := u.Query()
		q.Del("schema") // baton's parameter, not the driver's
		u.RawQuery = q.Encode()
		c.db = u.String()
	}
	if _, err := schedule.Every(c.every, c.offset); err != nil {
		return c, fmt.Errorf("--every/--offset: %v", err)
	}
	if c.lease <= 0 {
		return c, fmt.Errorf("--lease must be positive, got %v", c.lease)
	}
	return c, nil
}

// run connects, creates the tables if needed, and serves the job until ctx
// ends.
func run(ctx context.Context, cfg config, logger *slog.Logger) error {
	st, err := postgres.Open(ctx, cfg.store)
	if err != nil {
		return err
	}
	defer st.Close()
	pool, err := pgxpool.New(ctx, cfg.db)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrate(ctx, pool); err != nil {
		return err
	}
	opts := []baton.Option{baton.WithLease(cfg.lease), baton.WithLogger(logger)}
	if cfg.node != "" {
		opts = append(opts, baton.WithNode(cfg.node))
	}
	el, err := baton.New(st, jobName, opts...)
	if err != nil {
		return err
	}
	days, _ := schedule.Every(cfg.every, cfg.offset) // checked by parseFlags
	b := &biller{pool: pool, every: cfg.every}
	return serve(ctx, st, el, days, b.execute, schedule.WithLogger(logger))
}

// migrate creates the application's tables and the fence table.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if err := pgfence.CreateTable(ctx, pool); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, schemaSQL); err != nil {
		return fmt.Errorf("creating the tables: %w", err)
	}
	return nil
}

// serve campaigns with el and, whenever this node leads, runs the job
// under its term with exec, until ctx ends.
func serve(ctx context.Context, st store.Store, el *baton.Elector, days schedule.Schedule, exec schedule.Executor, opts ...schedule.Option) error {
	return el.Run(ctx, func(ctx context.Context, t *baton.Term) error {
		r, err := schedule.New(st, schedule.Job{Name: jobName, Schedule: days}, exec, opts...)
		if err != nil {
			return err
		}
		return r.Run(ctx, t) // returns when the term ends
	})
}

// biller writes invoice lines.
type biller struct {
	pool  *pgxpool.Pool
	every time.Duration
}

// billDay writes the invoice lines of the day that closed at p.Scheduled,
// fenced by token, and returns how many lines it wrote: 0 when the day was
// billed before. When a newer term has written, the error wraps
// fence.ErrStaleToken and nothing is written.
func (b *biller) billDay(ctx context.Context, p schedule.Period, token uint64) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		// First the fence: it raises the stored token or refuses, and
		// holds the fence's row lock until the transaction ends.
		if err := pgfence.Check(ctx, tx, jobName, token); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, billSQL, p.Key, p.Scheduled.Add(-b.every), p.Scheduled, int64(token))
		n = tag.RowsAffected()
		return err
	})
	return n, err
}

// execute is the job's schedule.Executor.
func (b *biller) execute(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
	n, err := b.billDay(ctx, p, token)
	switch {
	case err == nil && n == 0:
		return 0, "no invoice lines written: billed before, or no sales", nil
	case err == nil:
		return 0, fmt.Sprintf("%d invoice lines written", n), nil
	case errors.Is(err, fence.ErrStaleToken):
		// A newer leader has written: this term is over, and the ledger
		// refuses to record this outcome too.
		return 1, "", err
	case ctx.Err() != nil:
		return 0, "", err // the term ended: the next leader runs the day again
	default:
		// The database could not be reached: run the day again. (A
		// permanent error would be retried forever; it is logged.)
		return 0, "", fmt.Errorf("%w: %w", schedule.ErrInterrupted, err)
	}
}
