package kube

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// The URL scheme: kube://NAMESPACE, the Leases of a namespace reached
// through the API server.
func init() {
	storedriver.Register(storedriver.Scheme{
		Names:      []string{"kube", "kubernetes"},
		Form:       "kube://NAMESPACE[?kubeconfig=PATH]",
		Note:       "for the Lease objects of a Kubernetes namespace",
		Rank:       40,
		Networked:  true,
		Hint:       "API server unreachable?",
		LedgerRows: LedgerRows,
		Open: func(ctx context.Context, rawURL string, readOnly bool) (store.Store, error) {
			if readOnly {
				return storedriver.Opened(OpenURL(ctx, rawURL, WithReadOnly()))
			}
			return storedriver.Opened(OpenURL(ctx, rawURL))
		},
	})
}

// LedgerRows is the most run ledger rows a job may keep on this store,
// by count: the store reports it (store.LedgerBounded), so that
// schedule.New refuses a retention that keeps more, and its scheme
// declares it (storedriver.Scheme.LedgerRows), so that baton run does so
// before it opens the store. It
// is a bound on rows of short outputs (about 310 bytes each; 800 fit):
// rows with long output tails take more of a Lease's 250 KiB, and a
// ledger write past that still fails (ErrInvalid).
const LedgerRows = 500

// usage is how a kube URL is written.
const usage = "use kube://NAMESPACE[?kubeconfig=PATH&session-hold=DURATION&qps=N]"

// ParseURL splits a kube:// store URL (see OpenURL) into the namespace
// and options, validating both.
func ParseURL(rawURL string) (namespace string, opts []Option, err error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok || (!strings.EqualFold(scheme, "kube") && !strings.EqualFold(scheme, "kubernetes")) {
		return "", nil, storedriver.BadURL("does not start with kube://; " + usage)
	}
	namespace, query, _ := strings.Cut(rest, "?")
	namespace = strings.TrimSuffix(namespace, "/")
	if namespace == "" || strings.Contains(namespace, "/") {
		return "", nil, storedriver.BadURL("names no namespace, or more than one path part; " + usage)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", nil, storedriver.BadURL(fmt.Sprintf("bad query: %v; %s", err, usage))
	}
	for k, vs := range q {
		if len(vs) != 1 {
			return "", nil, storedriver.BadURL(fmt.Sprintf("parameter %s is given %d times; give it once", k, len(vs)))
		}
		switch k {
		case "kubeconfig":
			opts = append(opts, WithKubeconfig(vs[0]))
		case "session-hold":
			d, err := time.ParseDuration(vs[0])
			if err != nil {
				return "", nil, storedriver.BadURL(fmt.Sprintf("session-hold=%q is not a duration; give one such as 1h or 10m", vs[0]))
			}
			opts = append(opts, WithSessionHold(d))
		case "qps":
			n, err := strconv.Atoi(vs[0])
			if err != nil {
				return "", nil, storedriver.BadURL(fmt.Sprintf("qps=%q is not a whole number; give requests a second, such as 100", vs[0]))
			}
			opts = append(opts, WithQPS(n))
		default:
			return "", nil, storedriver.BadURL(fmt.Sprintf("unknown parameter %s; %s", k, usage))
		}
	}
	return namespace, opts, nil
}
