package kube

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// The client's scheme holds coordination.k8s.io/v1 and nothing else.
// client-go's generated typed client registers every API group of
// Kubernetes (k8s.io/client-go/kubernetes/scheme): linking it made the
// operator binary 24.7 MB larger; this one, a REST client on a scheme of
// one group, does what the store needs of it.
var (
	leaseScheme = runtime.NewScheme()
	leaseCodecs = serializer.NewCodecFactory(leaseScheme)
	leaseParams = runtime.NewParameterCodec(leaseScheme)
)

func init() {
	utilruntime.Must(coordinationv1.AddToScheme(leaseScheme))
	metav1.AddToGroupVersion(leaseScheme, schema.GroupVersion{Version: "v1"})
}

// leaseClient is the Lease calls of one namespace: get, list, watch,
// create and update.
type leaseClient struct {
	rc *rest.RESTClient
	ns string
}

// newLeaseClient returns a client of namespace's Leases through cfg.
func newLeaseClient(cfg *rest.Config, namespace string) (*leaseClient, error) {
	cfg = rest.CopyConfig(cfg)
	gv := coordinationv1.SchemeGroupVersion
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = leaseCodecs.WithoutConversion()
	if cfg.ContentType == "" && cfg.AcceptContentTypes == "" {
		// Protobuf on the wire where the configuration chose nothing:
		// a list of many Leases decodes several times faster than its
		// JSON (GetMany's lists, a Group's check sweep).
		cfg.ContentType = runtime.ContentTypeProtobuf
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &leaseClient{rc: rc, ns: namespace}, nil
}

// Get returns the Lease name.
func (c *leaseClient) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := c.rc.Get().Namespace(c.ns).Resource("leases").Name(name).VersionedParams(&opts, leaseParams).Do(ctx).Into(out)
	return out, err
}

// List returns a page of the namespace's Leases.
func (c *leaseClient) List(ctx context.Context, opts metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	out := &coordinationv1.LeaseList{}
	err := c.rc.Get().Namespace(c.ns).Resource("leases").VersionedParams(&opts, leaseParams).Do(ctx).Into(out)
	return out, err
}

// Watch watches the namespace's Leases.
func (c *leaseClient) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return c.rc.Get().Namespace(c.ns).Resource("leases").VersionedParams(&opts, leaseParams).Watch(ctx)
}

// Create creates l.
func (c *leaseClient) Create(ctx context.Context, l *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := c.rc.Post().Namespace(c.ns).Resource("leases").VersionedParams(&opts, leaseParams).Body(l).Do(ctx).Into(out)
	return out, err
}

// Update replaces l if its resourceVersion is the stored one (409
// Conflict otherwise).
func (c *leaseClient) Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := c.rc.Put().Namespace(c.ns).Resource("leases").Name(l.Name).VersionedParams(&opts, leaseParams).Body(l).Do(ctx).Into(out)
	return out, err
}
