package des

import (
	"math/bits"
	"slices"
)

// queue is the pending event set: a calendar wheel for the near future
// and a 4-ary heap for the far future. In a fabric almost every event is
// due within a few microseconds (a serialization, a routing delay, a cable),
// so the wheel makes scheduling and firing O(1): an event goes into the
// bucket of its time, a bucket is sorted once when the clock reaches it,
// and a bitmap finds the next non-empty bucket. Events beyond the wheel's
// horizon wait in the heap and move into the wheel as the clock nears them.
//
// Order is exactly that of (time, insertion sequence), as with a single
// heap: buckets partition time, and within a bucket keys are sorted.
type queue struct {
	buckets  [wheelSize][]key
	nonEmpty [wheelSize / 64]uint64
	cur      int64 // absolute bucket number being drained
	curPos   int   // next key to fire in the current bucket
	curSort  bool  // the current bucket is sorted from curPos on
	inWheel  int
	far      []key // 4-ary heap of keys at or beyond the horizon
	// spare holds the grown slices of drained buckets for the next
	// bucket that outgrows its room, by size: spare[c] the slices of
	// room bucketCap<<c. Without it every one of the 16,384 buckets kept
	// the largest slice it ever needed: a network whose switches move in
	// step (same packet size, same link rate) puts hundreds of events into
	// one nanosecond, and the wheel then held 16,384 times that (over
	// 100 MB on a 256-host MIN) although only the buckets of the next few
	// hundred nanoseconds are ever in use. A slice a bucket outgrows goes
	// back too, so that once every size has been needed as often as it is
	// at once, the wheel allocates nothing.
	spare [spareClasses][][]key
}

const (
	bucketShift = 10 // 1.024 ns per bucket
	wheelBits   = 14 // 16384 buckets: a horizon of about 16.8 us
	wheelSize   = 1 << wheelBits
	wheelMask   = wheelSize - 1
)

// bucketCap is the room every bucket starts with, carved from one
// allocation, so that the first laps of the wheel do not grow 16,384 small
// slices one append at a time.
const bucketCap = 4

// spareClasses bounds the sizes spare keeps: up to bucketCap<<31 keys, more
// than any bucket can hold.
const spareClasses = 32

// spareClass returns the class of a slice of room c, a power of two times
// bucketCap above bucketCap (the slices grow makes), or -1 for the room
// carved for every bucket at init, which stays with its bucket.
func spareClass(c int) int {
	if c <= bucketCap {
		return -1
	}
	return bits.Len(uint(c/bucketCap)) - 1
}

// putSpare keeps the emptied slice s for a later grow.
func (q *queue) putSpare(s []key) {
	if c := spareClass(cap(s)); c >= 0 {
		q.spare[c] = append(q.spare[c], s[:0])
	}
}

func (q *queue) init() {
	backing := make([]key, wheelSize*bucketCap)
	for i := range q.buckets {
		q.buckets[i] = backing[i*bucketCap : i*bucketCap : (i+1)*bucketCap]
	}
}

func bucketOf(t Time) int64 { return int64(t) >> bucketShift }

func (q *queue) len() int { return q.inWheel + len(q.far) }

func (q *queue) push(k key) {
	b := bucketOf(k.at)
	if b >= q.cur+wheelSize {
		q.far = heapPush(q.far, k)
		return
	}
	q.insert(b, k)
}

// insert puts k into the wheel bucket b (cur <= b < cur+wheelSize).
func (q *queue) insert(b int64, k key) {
	i := int(b & wheelMask)
	bk := q.buckets[i]
	if b == q.cur && q.curSort {
		// Keep the sorted tail of the bucket being drained sorted: k goes
		// after every key that precedes it.
		lo, hi := q.curPos, len(bk)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if bk[m].less(k) {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if len(bk) == cap(bk) {
			bk = q.grow(bk)
		}
		bk = append(bk, key{})
		copy(bk[lo+1:], bk[lo:])
		bk[lo] = k
	} else {
		if len(bk) == cap(bk) {
			bk = q.grow(bk)
		}
		bk = append(bk, k)
	}
	q.buckets[i] = bk
	q.nonEmpty[i>>6] |= 1 << uint(i&63)
	q.inWheel++
}

// grow returns bk's keys in a slice with twice its room (at least
// 2*bucketCap): a spare one of that size if there is one, else a new one.
// bk, outgrown, becomes a spare.
func (q *queue) grow(bk []key) []key {
	room := max(2*cap(bk), 2*bucketCap)
	var s []key
	sp := &q.spare[spareClass(room)]
	if n := len(*sp); n > 0 {
		s = (*sp)[n-1]
		(*sp)[n-1] = nil
		*sp = (*sp)[:n-1]
	} else {
		s = make([]key, 0, room)
	}
	s = append(s, bk...)
	q.putSpare(bk)
	return s
}

// popUntil removes and returns the earliest key if it is due by until.
// It never moves the wheel past the bucket of until, so that events
// scheduled later at or after until still land in or after the current
// bucket.
func (q *queue) popUntil(until Time) (key, bool) {
	for {
		i := int(q.cur & wheelMask)
		bk := q.buckets[i]
		if q.curPos < len(bk) {
			if !q.curSort {
				sortKeys(bk[q.curPos:])
				q.curSort = true
			}
			k := bk[q.curPos]
			if k.at > until {
				return key{}, false
			}
			q.curPos++
			q.inWheel--
			if q.curPos == len(bk) {
				q.buckets[i] = bk[:0]
				if cap(bk) > bucketCap {
					q.putSpare(bk)
					q.buckets[i] = nil
				}
				q.curPos = 0
				q.nonEmpty[i>>6] &^= 1 << uint(i&63)
			}
			return k, true
		}
		// The current bucket is drained: move to the next non-empty one,
		// or to the far heap's earliest bucket, unless that is past until.
		var next int64
		switch {
		case q.inWheel > 0:
			next = q.cur + int64(q.nextNonEmpty(i))
		case len(q.far) > 0:
			next = bucketOf(q.far[0].at)
		default:
			return key{}, false
		}
		if next > bucketOf(until) {
			return key{}, false
		}
		q.cur = next
		q.curPos, q.curSort = 0, false
		for len(q.far) > 0 && bucketOf(q.far[0].at) < q.cur+wheelSize {
			var k key
			q.far, k = heapPop(q.far)
			q.insert(bucketOf(k.at), k)
		}
	}
}

// nextNonEmpty returns the distance from bucket index i to the next
// non-empty bucket index, going round the wheel (1..wheelSize-1).
func (q *queue) nextNonEmpty(i int) int {
	for d := 1; d < wheelSize; {
		j := (i + d) & wheelMask
		w := q.nonEmpty[j>>6] >> uint(j&63)
		if w != 0 {
			return d + bits.TrailingZeros64(w)
		}
		d += 64 - j&63
	}
	panic("des: wheel count says non-empty but no bucket is")
}

// min returns the earliest key without removing it.
func (q *queue) min() (key, bool) {
	if q.inWheel == 0 {
		if len(q.far) == 0 {
			return key{}, false
		}
		return q.far[0], true
	}
	i := int(q.cur & wheelMask)
	bk := q.buckets[i]
	if q.curPos >= len(bk) {
		i = (i + q.nextNonEmpty(i)) & wheelMask
		bk = q.buckets[i]
		return minKey(bk), true
	}
	if q.curSort {
		return bk[q.curPos], true
	}
	return minKey(bk[q.curPos:]), true
}

func minKey(ks []key) key {
	m := ks[0]
	for _, k := range ks[1:] {
		if k.less(m) {
			m = k
		}
	}
	return m
}

// sortKeys sorts a bucket: insertion sort, as buckets are short and
// mostly in order already; a general sort when one is not.
func sortKeys(ks []key) {
	if len(ks) > 32 {
		slices.SortFunc(ks, func(a, b key) int {
			if a.less(b) {
				return -1
			}
			return 1
		})
		return
	}
	for i := 1; i < len(ks); i++ {
		k := ks[i]
		j := i
		for j > 0 && k.less(ks[j-1]) {
			ks[j] = ks[j-1]
			j--
		}
		ks[j] = k
	}
}

// 4-ary heap on keys. Children of i are 4i+1..4i+4.

func heapPush(h []key, k key) []key {
	h = append(h, k)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) >> 2
		if !k.less(h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = k
	return h
}

func heapPop(h []key) ([]key, key) {
	top := h[0]
	n := len(h) - 1
	last := h[n]
	h = h[:n]
	if n > 0 {
		i := 0
		for {
			c := 4*i + 1
			if c >= n {
				break
			}
			m := c
			end := min(c+4, n)
			for j := c + 1; j < end; j++ {
				if h[j].less(h[m]) {
					m = j
				}
			}
			if !h[m].less(last) {
				break
			}
			h[i] = h[m]
			i = m
		}
		h[i] = last
	}
	return h, top
}
