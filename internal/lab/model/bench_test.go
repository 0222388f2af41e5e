package model

import "testing"

func BenchmarkRun(b *testing.B) {
	p := DefaultParams()
	b.ReportAllocs()
	for b.Loop() {
		Run(p)
	}
}
