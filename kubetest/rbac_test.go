package kubetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/kube"
)

// exampleDir holds the Kubernetes manifests of the example.
const exampleDir = "../examples/kubernetes"

// resources maps the example's kinds to their resources.
var resources = map[string]schema.GroupVersionResource{
	"ServiceAccount": {Version: "v1", Resource: "serviceaccounts"},
	"Role":           {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	"RoleBinding":    {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	"Deployment":     {Group: "apps", Version: "v1", Resource: "deployments"},
}

// manifests reads every object of the example's YAML files.
func manifests(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(exampleDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", exampleDir, err)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(u.Object) > 0 {
				out = append(out, u)
			}
		}
	}
	return out
}

// apply applies u in namespace ns by server-side apply.
func apply(ctx context.Context, t *testing.T, dc dynamic.Interface, ns string, u *unstructured.Unstructured) {
	t.Helper()
	gvr, ok := resources[u.GetKind()]
	if !ok {
		t.Fatalf("the example has a %s, which this test does not know", u.GetKind())
	}
	raw, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	force := true
	if _, err := dc.Resource(gvr).Namespace(ns).Patch(ctx, u.GetName(), types.ApplyPatchType, raw, metav1.PatchOptions{FieldManager: "kubetest", Force: &force}); err != nil {
		t.Fatalf("server-side apply of %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// testExampleRBAC applies examples/kubernetes to the API server by
// server-side apply, runs a baton Elector on store/kube as the example's
// ServiceAccount (impersonated) under its Role, then removes each of the
// Role's verbs in turn and expects Open, which checks every verb the
// store uses, to fail in one line naming the verb and the resource: the
// Role grants what baton uses and nothing it does not.
func (e *env) testExampleRBAC(t *testing.T) {
	ns := e.namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dc, err := dynamic.NewForConfig(e.srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	objs := manifests(t)
	var role *unstructured.Unstructured
	for _, u := range objs {
		apply(ctx, t, dc, ns, u)
		if u.GetKind() == "Role" {
			role = u
		}
	}
	if role == nil {
		t.Fatal("the example has no Role")
	}
	sa := rest.CopyConfig(e.srv.Config)
	sa.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":baton"}

	// Under the Role: the job's elector campaigns, wins, renews, resigns.
	// (A CI run opened the store 30 ms after the apply, and was refused.)
	st, err := openAuthorized(ctx, sa, ns, granted)
	if err != nil {
		t.Fatalf("Open as the example's ServiceAccount: %v", err)
	}
	el, err := baton.New(st, "billing", baton.WithNode("pod-1"), baton.WithLease(time.Second), baton.WithClockMargin(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	term, err := el.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-term.Renewed():
	case <-ctx.Done():
		t.Fatal("the term was never renewed under the Role")
	}
	if err := term.Err(); err != nil {
		t.Fatalf("the term ended under the Role: %v", err)
	}
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	el.Close(ctx)

	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	if len(rules) != 1 {
		t.Fatalf("the Role has %d rules, want one on leases", len(rules))
	}
	verbs, _, _ := unstructured.NestedStringSlice(rules[0].(map[string]any), "verbs")
	slices.Sort(verbs)
	if want := []string{"create", "get", "list", "update", "watch"}; !slices.Equal(verbs, want) {
		t.Fatalf("the Role grants %v; store/kube uses %v", verbs, want)
	}
	for _, verb := range verbs {
		less := role.DeepCopy()
		rule := rules[0].(map[string]any)
		rule = map[string]any{"apiGroups": rule["apiGroups"], "resources": rule["resources"], "verbs": toAny(slices.DeleteFunc(slices.Clone(verbs), func(v string) bool { return v == verb }))}
		if err := unstructured.SetNestedSlice(less.Object, []any{rule}, "rules"); err != nil {
			t.Fatal(err)
		}
		apply(ctx, t, dc, ns, less)
		// Wait until the refusal names the verb: once, the cache's first
		// refusal after the change named another verb the Role grants.
		_, err := openAuthorized(ctx, sa, ns, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "forbidden to "+verb+" ")
		})
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(msg, "forbidden to "+verb+" leases.coordination.k8s.io") || strings.Contains(msg, "\n") {
			t.Errorf("without %q: Open said %q; want one line naming the verb and leases.coordination.k8s.io", verb, msg)
		} else {
			t.Logf("without %q: %s", verb, msg)
		}
		apply(ctx, t, dc, ns, role)
		if _, err := openAuthorized(ctx, sa, ns, granted); err != nil {
			t.Fatalf("with the Role restored: %v", err)
		}
	}
}

// openAuthorized opens store/kube as sa until Open's error satisfies
// done, for at most 10 s, and returns the last Open's result: the API
// server's authorizer reads Roles from its cache, so a Role just applied
// or changed takes effect a moment later.
func openAuthorized(ctx context.Context, sa *rest.Config, ns string, done func(error) bool) (store.Store, error) {
	var st store.Store
	var err error
	testenv.WaitFor(10*time.Second, func() bool {
		st, err = kube.Open(ctx, sa, ns)
		return done(err)
	})
	return st, err
}

// granted is openAuthorized's done for a Role that grants every verb.
func granted(err error) bool { return err == nil }

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
