package schedule_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/robfig/cron/v3"
	"pgregory.net/rapid"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

func loadLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("time zone %s not available: %v", name, err)
	}
	return loc
}

func cronIn(t testing.TB, expr string, loc *time.Location) schedule.Schedule {
	t.Helper()
	s, err := schedule.Cron(expr, loc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// perLocalDay counts the instants of s in the local days of loc from day
// (a date) for n days.
func perLocalDay(s schedule.Schedule, loc *time.Location, day string, n int) map[string]int {
	d, _ := time.ParseInLocation("2006-01-02", day, loc)
	end := d.AddDate(0, 0, n)
	got := map[string]int{}
	for x := s.Next(d.Add(-time.Nanosecond)); x.Before(end); x = s.Next(x) {
		got[x.In(loc).Format("2006-01-02")]++
	}
	return got
}

// Cron's rule across a daylight saving change, in Paris (2026-03-29: 02:00
// CET becomes 03:00 CEST; 2026-10-25: 03:00 CEST becomes 02:00 CET).
func TestCronAcrossDaylightSavingChanges(t *testing.T) {
	paris := loadLoc(t, "Europe/Paris")
	tests := []struct {
		expr string
		from string
		want []string // local times, in order
	}{
		// A skipped local time runs once, at the first instant after the jump.
		{"30 2 * * *", "2026-03-27T00:00:00Z", []string{"03-27 02:30+01", "03-28 02:30+01", "03-29 03:00+02", "03-30 02:30+02"}},
		// Several skipped times, and 03:00 itself, make one instant.
		{"0,30 2,3 * * *", "2026-03-29T00:00:00Z", []string{"03-29 03:00+02", "03-29 03:30+02", "03-30 02:00+02"}},
		// A repeated local time runs once, at its first occurrence.
		{"30 2 * * *", "2026-10-23T00:00:00Z", []string{"10-23 02:30+02", "10-24 02:30+02", "10-25 02:30+02", "10-26 02:30+01"}},
		{"* 2 * * *", "2026-10-25T00:58:00Z", []string{"10-25 02:59+02", "10-26 02:00+01"}},
		{"@daily", "2026-03-28T12:00:00Z", []string{"03-29 00:00+01", "03-30 00:00+02"}},
		// A wildcard or step hour follows real time: the skipped hour has
		// no instant, the repeated one has two.
		{"30 * * * *", "2026-03-29T00:00:00Z", []string{"03-29 01:30+01", "03-29 03:30+02"}},
		{"0 * * * *", "2026-10-24T23:30:00Z", []string{"10-25 02:00+02", "10-25 02:00+01", "10-25 03:00+01"}},
		{"*/30 */1 * * *", "2026-10-25T00:00:00Z", []string{"10-25 02:30+02", "10-25 02:00+01", "10-25 02:30+01"}},
	}
	for _, tt := range tests {
		t.Run(tt.expr+"/"+tt.from, func(t *testing.T) {
			s := cronIn(t, tt.expr, paris)
			x := mustTime(t, tt.from)
			var got []string
			for range tt.want {
				x = s.Next(x)
				if x.Location() != time.UTC {
					t.Fatalf("Next returned %v, not a UTC time", x)
				}
				got = append(got, x.In(paris).Format("01-02 15:04-07"))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestCronOncePerLocalDayAndHourlyCounts(t *testing.T) {
	for _, zone := range []string{"Europe/Paris", "America/New_York", "Australia/Sydney", "Australia/Lord_Howe"} {
		loc := loadLoc(t, zone)
		daily := cronIn(t, "30 2 * * *", loc)
		hourly := cronIn(t, "0 * * * *", loc)
		for _, d := range perLocalDay(daily, loc, "2026-01-01", 365) {
			if d != 1 {
				t.Errorf("%s: a daily schedule has %d instants on a local day: %v", zone, d, perLocalDay(daily, loc, "2026-01-01", 365))
				break
			}
		}
		if n := len(perLocalDay(daily, loc, "2026-01-01", 365)); n != 365 {
			t.Errorf("%s: daily schedule ran on %d local days of 365", zone, n)
		}
		total := 0
		for _, n := range perLocalDay(hourly, loc, "2026-01-01", 365) {
			total += n
		}
		// An hourly job fires every real hour: the year has 365*24 of them
		// (Lord Howe's half-hour change leaves it at hour marks too).
		if zone != "Australia/Lord_Howe" && total != 365*24 {
			t.Errorf("%s: hourly schedule fired %d times in 2026, want %d", zone, total, 365*24)
		}
	}
	paris := loadLoc(t, "Europe/Paris")
	got := perLocalDay(cronIn(t, "0 * * * *", paris), paris, "2026-03-28", 3)
	if got["2026-03-28"] != 24 || got["2026-03-29"] != 23 || got["2026-03-30"] != 24 {
		t.Errorf("hourly around 2026-03-29: %v", got)
	}
	got = perLocalDay(cronIn(t, "0 * * * *", paris), paris, "2026-10-24", 3)
	if got["2026-10-24"] != 24 || got["2026-10-25"] != 25 || got["2026-10-26"] != 24 {
		t.Errorf("hourly around 2026-10-25: %v", got)
	}
}

// Away from a change, Next is robfig/cron's: the rule only matters where a
// zone's offset changes.
func TestCronAgreesWithRobfigAwayFromChanges(t *testing.T) {
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	exprs := []string{"30 2 * * *", "0 * * * *", "*/15 * * * *", "0 9 * * 1-5", "15 3 1 * *", "@weekly", "0 0 29 2 *", "5,35 1-4 * 1,6 *"}
	zones := []string{"UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "America/Sao_Paulo"}
	locs := map[string]*time.Location{}
	for _, z := range zones {
		locs[z] = loadLoc(t, z)
	}
	rapid.Check(t, func(t *rapid.T) {
		expr := rapid.SampledFrom(exprs).Draw(t, "expr")
		loc := locs[rapid.SampledFrom(zones).Draw(t, "zone")]
		from := time.Unix(rapid.Int64Range(1e9, 2.5e9).Draw(t, "from"), 0).UTC()
		s, err := schedule.Cron(expr, loc)
		if err != nil {
			t.Fatal(err)
		}
		got := s.Next(from)
		spec, _ := parser.Parse(expr)
		spec.(*cron.SpecSchedule).Location = loc
		want := spec.Next(from)
		if !got.After(from) {
			t.Fatalf("Next(%v) = %v, not after it", from, got)
		}
		// A change of offset between from and the answer (or just around
		// them) is where the rule may differ.
		_, off1 := from.In(loc).Zone()
		_, off2 := want.Add(7 * time.Hour).In(loc).Zone()
		_, off3 := from.Add(-7 * time.Hour).In(loc).Zone()
		_, off4 := got.Add(7 * time.Hour).In(loc).Zone()
		if off1 == off2 && off1 == off3 && off1 == off4 && !got.Equal(want) {
			t.Fatalf("%s in %s: Next(%v) = %v, robfig/cron says %v", expr, loc, from, got, want)
		}
	})
}

// skewed is the bubble's clock moved to another date: synctest starts at
// 2000-01-01, the DST days under test are in 2026.
type skewed struct{ off time.Duration }

func (c skewed) Now() time.Time { return time.Now().Add(c.off) }
func (c skewed) NewTimer(d time.Duration) baton.Timer {
	return baton.RealClock{}.NewTimer(d)
}

// A Runner driven across both of 2026's changes in Paris on virtual time
// runs a daily job once per local day and an hourly job 23 and 25 times on
// the days of the changes. As in TestRetentionByAge, the leader renews
// its lease every 20 minutes by default (renewals are not what this
// measures; every 10s is 52,000 wake-ups over the three days of both
// jobs), and every 10 seconds with testenv.Long (CI).
func TestRunnerAcrossDaylightSavingChanges(t *testing.T) {
	paris := loadLoc(t, "Europe/Paris")
	lease, renew := time.Hour, 20*time.Minute
	if testenv.Long() {
		lease, renew = 30*time.Second, 10*time.Second
	}
	t.Logf("lease %v, renewed every %v", lease, renew)
	for _, tc := range []struct {
		start           string
		days            []string
		dailyPerDay     []int
		hourlyPerDayDay []int
	}{
		{"2026-03-28", []string{"2026-03-28", "2026-03-29", "2026-03-30"}, []int{1, 1, 1}, []int{24, 23, 24}},
		{"2026-10-24", []string{"2026-10-24", "2026-10-25", "2026-10-26"}, []int{1, 1, 1}, []int{24, 25, 24}},
	} {
		t.Run(tc.start, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				begin, _ := time.ParseInLocation("2006-01-02", tc.start, paris)
				clk := skewed{off: begin.Add(-time.Minute).Sub(time.Now())}
				ms := memstore.New(memstore.WithTime(clk.Now))
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				for _, job := range []schedule.Job{
					{Name: "daily", Schedule: cronIn(t, "30 2 * * *", paris)},
					{Name: "hourly", Schedule: cronIn(t, "0 * * * *", paris)},
				} {
					el, err := baton.New(ms, job.Name, baton.WithNode("a"), baton.WithLease(lease),
						baton.WithRenew(renew), baton.WithClockMargin(time.Second), baton.WithPoll(10*time.Second))
					if err != nil {
						t.Fatal(err)
					}
					r, err := schedule.New(ms, job, func(context.Context, schedule.Period, uint64) (int, string, error) { return 0, "", nil },
						schedule.WithClock(clk), schedule.WithPoll(time.Minute), schedule.WithRescan(time.Hour))
					if err != nil {
						t.Fatal(err)
					}
					go func() {
						defer func() { done <- struct{}{} }()
						el.Run(ctx, func(ctx context.Context, tm *baton.Term) error { return r.Run(ctx, tm) })
					}()
				}
				time.Sleep(3*24*time.Hour + 2*time.Hour)
				cancel()
				<-done
				<-done
				count := func(job string) map[string]int {
					rs, err := ms.Runs(context.Background(), job, "", 0)
					if err != nil {
						t.Fatal(err)
					}
					n := map[string]int{}
					for _, r := range rs {
						if r.State != store.Done {
							t.Errorf("%s %s: %s", job, r.Period, r.State)
						}
						n[r.Scheduled.In(paris).Format("2006-01-02")]++
					}
					return n
				}
				daily, hourly := count("daily"), count("hourly")
				for i, d := range tc.days {
					if daily[d] != tc.dailyPerDay[i] || hourly[d] != tc.hourlyPerDayDay[i] {
						t.Errorf("%s: %d daily and %d hourly done rows, want %d and %d", d, daily[d], hourly[d], tc.dailyPerDay[i], tc.hourlyPerDayDay[i])
					}
				}
			})
		})
	}
}

// Day of week 7 is Sunday, as in Vixie cron and cronie: alone, in ranges
// (with steps) and in lists, each the same instants as its 0-to-6 form.
func TestCronDayOfWeekSevenIsSunday(t *testing.T) {
	for expr, same := range map[string]string{
		"0 9 * * 7":       "0 9 * * 0",
		"0 9 * * 7-7":     "0 9 * * 0",
		"0 9 * * 7/2":     "0 9 * * 0",
		"0 9 * * 5-7":     "0 9 * * 0,5,6",
		"0 9 * * 0-7":     "0 9 * * 0-6",
		"0 9 * * 1-7/2":   "0 9 * * 0,1,3,5",
		"0 9 * * 2-7/2":   "0 9 * * 2,4,6",
		"0 9 * * 6-7/2":   "0 9 * * 6",
		"0 9 * * 1,7":     "0 9 * * 0,1",
		"0 9 * * 3,5-7":   "0 9 * * 0,3,5,6",
		"0 9 * * mon-7":   "0 9 * * 0-6",
		"0 9 1 * 7":       "0 9 1 * 0",
		"*/30 9 * * 6,7":  "*/30 9 * * 0,6",
		"0 9 * * 1-5":     "0 9 * * 1-5",
		"0 9 * * SUN,SAT": "0 9 * * 0,6",
	} {
		a, b := cronIn(t, expr, time.UTC), cronIn(t, same, time.UTC)
		x := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := 0; i < 200; i++ {
			na, nb := a.Next(x), b.Next(x)
			if !na.Equal(nb) {
				t.Errorf("%q: next after %s is %s; %q says %s", expr, x, na, same, nb)
				break
			}
			x = na
		}
		if got := fmt.Sprint(a); got != fmt.Sprintf("cron %q in UTC", expr) {
			t.Errorf("%q prints as %s", expr, got)
		}
	}
	for _, expr := range []string{"0 9 * * 8", "0 9 * * 0-8", "0 9 * * 1,8"} {
		_, err := schedule.Cron(expr, time.UTC)
		if err == nil || !strings.Contains(err.Error(), "want 0 to 7 (0 and 7 are Sunday)") {
			t.Errorf("Cron(%q): %v; want a refusal naming the range 0 to 7", expr, err)
		}
	}
}
