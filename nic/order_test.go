package nic

import "testing"

func TestMergeOrderReportsEmpty(t *testing.T) {
	r := mergeOrderReports("s", nil)
	if r.Stream != "s" || r.ReorderedRatio != 0 || r.NReordering[7].N != 8 {
		t.Errorf("%+v", r)
	}
}
