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
