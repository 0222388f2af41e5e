package fence

import "testing"

// TestDialectStatements pins the statements, the Postgres ones in
// particular, which the SQLite tests do not run.
func TestDialectStatements(t *testing.T) {
	custom, err := Postgres.WithTable("fence_x")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		d                       Dialect
		upsert, highest, create string
	}{
		{
			SQLite,
			"INSERT INTO baton_fence (name, token) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET token = excluded.token WHERE baton_fence.token <= excluded.token",
			"SELECT token FROM baton_fence WHERE name = ?",
			"CREATE TABLE IF NOT EXISTS baton_fence (name TEXT PRIMARY KEY, token INTEGER NOT NULL) WITHOUT ROWID",
		},
		{
			Postgres,
			"INSERT INTO baton_fence (name, token) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET token = excluded.token WHERE baton_fence.token <= excluded.token",
			"SELECT token FROM baton_fence WHERE name = $1",
			"CREATE TABLE IF NOT EXISTS baton_fence (name TEXT PRIMARY KEY, token BIGINT NOT NULL)",
		},
		{
			custom,
			"INSERT INTO fence_x (name, token) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET token = excluded.token WHERE fence_x.token <= excluded.token",
			"SELECT token FROM fence_x WHERE name = $1",
			"CREATE TABLE IF NOT EXISTS fence_x (name TEXT PRIMARY KEY, token BIGINT NOT NULL)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.d.String(), func(t *testing.T) {
			for _, s := range []struct{ what, got, want string }{
				{"upsert", tt.d.upsert, tt.upsert},
				{"highest", tt.d.highest, tt.highest},
				{"create", tt.d.create, tt.create},
			} {
				if s.got != s.want {
					t.Errorf("%s:\n got %s\nwant %s", s.what, s.got, s.want)
				}
			}
		})
	}
}

// TestLogStatements pins the fence log's statements of both dialects.
func TestLogStatements(t *testing.T) {
	pg, _ := Postgres.WithLog(DefaultLogTable)
	lite, _ := SQLite.WithLog(DefaultLogTable)
	for _, s := range []struct{ got, want string }{
		{pg.logInsert, "INSERT INTO baton_fence_log (name, token, period, outcome, highest, at_ns) VALUES ($1, $2, $3, $4, $5, $6)"},
		{pg.logCreate, "CREATE TABLE IF NOT EXISTS baton_fence_log (seq BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, token BIGINT NOT NULL, period TEXT NOT NULL, outcome TEXT NOT NULL, highest BIGINT NOT NULL, at_ns BIGINT NOT NULL)"},
		{pg.logRead, "SELECT seq, name, token, period, outcome, highest, at_ns FROM baton_fence_log WHERE name = $1 ORDER BY seq"},
		{pg.logPrune, "DELETE FROM baton_fence_log WHERE name = $1 AND at_ns < $2"},
		{pg.logPruneBelow, "DELETE FROM baton_fence_log WHERE name = $1 AND at_ns < $2 AND period < $3"},
		{lite.logPruneBelow, "DELETE FROM baton_fence_log WHERE name = ? AND at_ns < ? AND period < ?"},
		{lite.logInsert, "INSERT INTO baton_fence_log (name, token, period, outcome, highest, at_ns) VALUES (?, ?, ?, ?, ?, ?)"},
		{lite.logCreate, "CREATE TABLE IF NOT EXISTS baton_fence_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, token BIGINT NOT NULL, period TEXT NOT NULL, outcome TEXT NOT NULL, highest BIGINT NOT NULL, at_ns BIGINT NOT NULL)"},
		{lite.logIndex, "CREATE INDEX IF NOT EXISTS baton_fence_log_name ON baton_fence_log (name, seq)"},
	} {
		if s.got != s.want {
			t.Errorf("\n got %s\nwant %s", s.got, s.want)
		}
	}
}
