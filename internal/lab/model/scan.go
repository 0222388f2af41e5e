package model

// ScanPoint is one run of a lease scan.
type ScanPoint struct {
	Lease  int    // the run's lease
	Outage int    // the run's outage
	Result Result // the run's measures
}

// Scan runs p once for every pair of a lease from leases and an outage from
// outages, replacing p.Lease and p.Outage, and returns the runs lease by
// lease, each lease's outages in the given order. All other fields of p,
// fencing and persistent trigger included, are used as given.
//
// It returns a *FieldError when a list is empty or a run's parameters are
// invalid.
func Scan(p Params, leases, outages []int) ([]ScanPoint, error) {
	if len(leases) == 0 {
		return nil, &FieldError{Field: "leases", Got: "empty", Want: "at least one lease"}
	}
	if len(outages) == 0 {
		return nil, &FieldError{Field: "outages", Got: "empty", Want: "at least one outage"}
	}
	for _, l := range leases {
		if l < 1 {
			return nil, &FieldError{Field: "leases", Got: joinInts(leases, ","), Want: "every lease an integer of at least 1 round"}
		}
	}
	for _, o := range outages {
		if o < 0 {
			return nil, &FieldError{Field: "outages", Got: joinInts(outages, ","), Want: "every outage an integer of at least 0 rounds"}
		}
	}
	points := make([]ScanPoint, 0, len(leases)*len(outages))
	for _, lease := range leases {
		for _, outage := range outages {
			q := p
			q.Lease, q.Outage = lease, outage
			if err := q.Validate(); err != nil {
				return nil, err
			}
			points = append(points, ScanPoint{Lease: lease, Outage: outage, Result: Run(q)})
		}
	}
	return points, nil
}
