package fence_test

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/batonhq/baton/fence"
)

func TestEnv(t *testing.T) {
	got := fence.Env("billing", 42, "2026-11-30", "node-3")
	want := []string{"BATON_NAME=billing", "BATON_TOKEN=42", "BATON_PERIOD=2026-11-30", "BATON_NODE=node-3"}
	if !slices.Equal(got, want) {
		t.Errorf("Env = %q, want %q", got, want)
	}
	got = fence.Env("billing", 1, "", "")
	want = []string{"BATON_NAME=billing", "BATON_TOKEN=1", "BATON_PERIOD=", "BATON_NODE="}
	if !slices.Equal(got, want) {
		t.Errorf("Env with empty period and node = %q, want %q", got, want)
	}
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string // unset when absent
		wantName  string
		wantToken uint64
		wantErr   error
	}{
		{"both set", map[string]string{"BATON_NAME": "billing", "BATON_TOKEN": "42"}, "billing", 42, nil},
		{"max token", map[string]string{"BATON_NAME": "billing", "BATON_TOKEN": "18446744073709551615"}, "billing", 1<<64 - 1, nil},
		{"nothing set", nil, "", 0, fence.ErrNoFence},
		{"no token", map[string]string{"BATON_NAME": "billing"}, "", 0, fence.ErrNoFence},
		{"empty token", map[string]string{"BATON_NAME": "billing", "BATON_TOKEN": ""}, "", 0, fence.ErrNoFence},
		{"no name", map[string]string{"BATON_TOKEN": "3"}, "", 0, fence.ErrNoFence},
		{"malformed token", map[string]string{"BATON_NAME": "billing", "BATON_TOKEN": "3x"}, "", 0, fence.ErrInvalidToken},
		{"token with space", map[string]string{"BATON_NAME": "billing", "BATON_TOKEN": " 3"}, "", 0, fence.ErrInvalidToken},
		{"token zero", map[string]string{"BATON_NAME": "billing", "BATON_TOKEN": "0"}, "", 0, fence.ErrInvalidToken},
		{"token overflow", map[string]string{"BATON_NAME": "billing", "BATON_TOKEN": "18446744073709551616"}, "", 0, fence.ErrInvalidToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{fence.EnvName, fence.EnvToken} {
				t.Setenv(k, "") // restored after the test
				os.Unsetenv(k)
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			name, token, err := fence.FromEnv()
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if name != tt.wantName || token != tt.wantToken {
				t.Errorf("FromEnv = %q, %d; want %q, %d", name, token, tt.wantName, tt.wantToken)
			}
		})
	}
}

// TestEnvOverridesParent: appended to os.Environ(), Env's entries win over
// the parent's own, empty ones included.
func TestEnvOverridesParent(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	t.Setenv(fence.EnvPeriod, "parent-period")
	cmd := exec.Command(sh, "-c", `printf '%s|%s|%s' "$BATON_NAME" "$BATON_TOKEN" "$BATON_PERIOD"`)
	cmd.Env = append(os.Environ(), fence.Env("billing", 7, "", "n1")...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "billing|7|" {
		t.Errorf("child saw %q, want %q", out, "billing|7|")
	}
}
