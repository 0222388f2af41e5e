package etcd

// SetBatchInFlight sets how many transactions of one batch are in flight
// at once, for the benchmarks that chose the default; it returns the
// previous value.
func SetBatchInFlight(n int) int {
	old := batchInFlight
	batchInFlight = n
	return old
}

// SetRangeMinNames sets from how many names on GetMany may read a range
// instead of sending gets; it returns the previous value.
func SetRangeMinNames(n int) int {
	old := rangeMinNames
	rangeMinNames = n
	return old
}
