package vcluster

import "fmt"

// Unbalanced is the balance check of balanced Groups (Config.Balance) in
// a quiet state, long after the last fault: where the pulls of
// election's balance rule stop. held is the number of names each node
// holds (-1: down, not counted), names how many the live nodes share,
// shares each node's weight (Config.Shares; nil: equal weights).
//
// With equal weights every live node holds names/P rounded down or up,
// P the live nodes: no node holds two more than another. With weights,
// for every two live nodes i and j, either no name moved from j to i
// would bring them closer to holding in proportion to their weights
// (lower h_i²/w_i + h_j²/w_j: 2(h_j*w_i - h_i*w_j) <= w_i + w_j), or i
// holds names*w_i/W rounded up already, W the sum of the live nodes'
// weights.
//
// It returns the live nodes P and, when the holding fails the check,
// what is wrong ("" when it passes, and when no node is live). The
// simulator checks a balanced run's end with it (package sim), the
// explorer every quiet state of its balanced configurations (package
// explore).
func Unbalanced(held []int, names int, shares []int) (live int, what string) {
	for _, h := range held {
		if h >= 0 {
			live++
		}
	}
	if live == 0 {
		return 0, ""
	}
	if shares != nil {
		return live, unbalancedByWeight(held, names, shares)
	}
	lo, hi := names/live, (names+live-1)/live
	for i, h := range held {
		if h >= 0 && (h < lo || h > hi) {
			return live, fmt.Sprintf("node-%d holds %d, want %d to %d", i, h, lo, hi)
		}
	}
	return live, ""
}

// unbalancedByWeight is Unbalanced's check with weights.
func unbalancedByWeight(held []int, n int, shares []int) string {
	sum := 0
	for i, h := range held {
		if h >= 0 {
			sum += shares[i]
		}
	}
	for i, hi := range held {
		for j, hj := range held {
			if i == j || hi < 0 || hj < 0 {
				continue
			}
			wi, wj := shares[i], shares[j]
			ceil := (n*wi + sum - 1) / sum
			if 2*(hj*wi-hi*wj) > wi+wj && hi < ceil {
				return fmt.Sprintf("a name of node-%d (weight %d) would bring node-%d (weight %d, under %d, %d*%d/%d rounded up) closer to proportion",
					j, wj, i, wi, ceil, n, wi, sum)
			}
		}
	}
	return ""
}
