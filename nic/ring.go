package nic

// ring is a growable FIFO ring, indexed from its oldest element. Its
// capacity is a power of two, so an index wraps with a mask. It holds a
// host's waiting messages (host.msgs), a connection's send entries
// (sendConn.ents) and the connections ready to send (delivery.ready).
type ring[T any] struct {
	buf        []T
	head, size int
}

func (r *ring[T]) push(v T) {
	if r.size == len(r.buf) {
		n := make([]T, max(8, 2*len(r.buf)))
		for i := 0; i < r.size; i++ {
			n[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
		}
		r.buf, r.head = n, 0
	}
	r.buf[(r.head+r.size)&(len(r.buf)-1)] = v
	r.size++
}

// at returns the i-th oldest element; i must be below size.
func (r *ring[T]) at(i int) *T { return &r.buf[(r.head+i)&(len(r.buf)-1)] }

// front returns the oldest element; the ring must not be empty.
func (r *ring[T]) front() *T { return &r.buf[r.head] }

// pop removes the oldest element and returns it; the ring must not be
// empty. The slot is cleared so the ring holds no reference to it.
func (r *ring[T]) pop() T {
	v := r.buf[r.head]
	var zero T
	r.buf[r.head] = zero
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.size--
	return v
}

// release gives back a buffer grown past limit elements once the ring is
// empty (what a burst grew).
func (r *ring[T]) release(limit int) {
	if r.size == 0 && len(r.buf) > limit {
		r.buf, r.head = nil, 0
	}
}
