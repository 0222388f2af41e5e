package kube

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/batonhq/baton/store"
)

// TestObjectName: a valid object name is kept (client-go and baton meet
// on one Lease), anything else is encoded into a valid one, and no two
// names share an object.
func TestObjectName(t *testing.T) {
	long := strings.Repeat("X", store.MaxNameLen)
	seen := map[string]string{}
	for _, name := range []string{"billing", "a.b-c", "Billing", "@session/n1/abc", "baton--x", "a/b", "ü", long} {
		o := objectName(name)
		if errs := validation.IsDNS1123Subdomain(o); len(errs) > 0 {
			t.Errorf("objectName(%q) = %q: %v", name, o, errs)
		}
		if prev, dup := seen[o]; dup {
			t.Errorf("%q and %q share the object %q", prev, name, o)
		}
		seen[o] = name
	}
	if objectName("billing") != "billing" || objectName("Billing") == "Billing" || objectName("baton--x") == "baton--x" {
		t.Error("objectName keeps what it must encode, or encodes what it must keep")
	}
}

// TestForeignSpec: a Lease written by client-go (no state) is a record
// held by its holderIdentity, its token leaseTransitions; a baton Lease
// whose spec another writer changed reads from the spec, the token never
// below either, the version above every one baton drew.
func TestForeignSpec(t *testing.T) {
	holder, secs, trans := "pod-a", int32(15), int32(7)
	renew := metav1.NewMicroTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "job", ResourceVersion: "500"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, LeaseTransitions: &trans, RenewTime: &renew}}
	o, err := decode("job", l)
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := o.record()
	if !ok || rec.Holder != "pod-a" || rec.Token != 7 || rec.Lease != 15*time.Second || rec.Version != 500 {
		t.Fatalf("client-go's Lease reads as %+v, %v", rec, ok)
	}

	// baton writes token 9 over it; then client-go takes it back,
	// keeping the annotations and writing leaseTransitions 8.
	o.st.Rec = &store.Record{Holder: "n1", Incarnation: "n1-1", Token: 9, Lease: 3 * time.Second, Version: o.next()}
	o.recWritten = true
	w, err := o.build("job", time.Now(), DefaultSessionHold)
	if err != nil {
		t.Fatal(err)
	}
	w.ResourceVersion = "501"
	if back, err := decode("job", w); err != nil || back.foreign || back.st.Rec.Token != 9 {
		t.Fatalf("baton's own write reads back as foreign=%v %+v, %v", back.foreign, back.st.Rec, err)
	}
	trans = 8
	w.Spec.HolderIdentity, w.Spec.LeaseTransitions, w.ResourceVersion = &holder, &trans, "502"
	o, err = decode("job", w)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ = o.record()
	if !o.foreign || rec.Holder != "pod-a" || rec.Incarnation != "" || rec.Token != 9 || rec.Version != 502 {
		t.Fatalf("after client-go's write: foreign=%v %+v; want pod-a, token 9, version 502", o.foreign, rec)
	}
}
