package traffic

import "fmt"

// hotRegionHosts returns the hosts of the hot region of paper 002 §3: a
// contiguous sub-mesh of 12.5 % of the machine. Hosts are laid out row by
// row, cols per row (host = y·cols + x, as on a k×k torus with one host per
// router). The region is the w×h block at the origin with w = cols/2 and
// h = rows/4 (or w = cols/4, h = rows/2 if the first does not divide).
// On a torus every position of the block is equivalent by symmetry; the
// paper's source ([6]) does not fix one. A single row (cols = N) gives the
// 1-D region {0 .. N/8-1}.
//
// cols = 0 picks the layout: a k×k square when N = k² with k a multiple of
// 4 (the 16×16 and 32×32 tori of paper 002), otherwise one row.
func hotRegionHosts(n, cols int) ([]int32, error) {
	if cols == 0 {
		cols = n
		k := isqrt(n)
		if k*k == n && k%4 == 0 {
			cols = k
		}
	}
	if cols < 1 || cols > n || n%cols != 0 {
		return nil, fmt.Errorf("hotregion: cols=%d does not divide the %d hosts into rows", cols, n)
	}
	rows := n / cols
	var w, h int
	switch {
	case rows == 1:
		if n%8 != 0 {
			return nil, fmt.Errorf("hotregion on one row needs a host count divisible by 8 (region = 12.5%%), got %d", n)
		}
		w, h = n/8, 1
	case cols%2 == 0 && rows%4 == 0:
		w, h = cols/2, rows/4
	case cols%4 == 0 && rows%2 == 0:
		w, h = cols/4, rows/2
	default:
		return nil, fmt.Errorf("hotregion: a %d×%d layout has no sub-mesh of exactly 12.5%% of the hosts (need cols/2 × rows/4 or cols/4 × rows/2)", cols, rows)
	}
	region := make([]int32, 0, w*h)
	for y := range h {
		for x := range w {
			region = append(region, int32(y*cols+x))
		}
	}
	return region, nil
}

// isqrt returns floor(sqrt(n)) for n >= 0.
func isqrt(n int) int {
	k := 0
	for (k+1)*(k+1) <= n {
		k++
	}
	return k
}
