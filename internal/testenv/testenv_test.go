package testenv

import "testing"

func TestRequired(t *testing.T) {
	tests := []struct {
		env, component string
		want           bool
	}{
		{"", "etcd", false},
		{"etcd", "etcd", true},
		{"postgres,etcd", "etcd", true},
		{"postgres, ETCD ", "etcd", true},
		{"postgres", "etcd", false},
		{"etcdx", "etcd", false},
	}
	for _, tc := range tests {
		t.Run(tc.env+"/"+tc.component, func(t *testing.T) {
			t.Setenv(RequireVar, tc.env)
			if got := Required(tc.component); got != tc.want {
				t.Fatalf("Required(%q) with %s=%q = %v, want %v", tc.component, RequireVar, tc.env, got, tc.want)
			}
		})
	}
}

func TestLong(t *testing.T) {
	tests := []struct {
		ci, long string
		want     bool
	}{
		{"", "", false},
		{"true", "", true},
		{"", "1", true},
		{"false", "0", false},
		{"1", "", false},
	}
	for _, tc := range tests {
		t.Run("CI="+tc.ci+",BATON_LONG="+tc.long, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			t.Setenv(LongVar, tc.long)
			if got := Long(); got != tc.want {
				t.Fatalf("Long() with CI=%q %s=%q = %v, want %v", tc.ci, LongVar, tc.long, got, tc.want)
			}
		})
	}
}
