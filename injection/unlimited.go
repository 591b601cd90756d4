package injection

// unlimited resends at once and never limits (paper 004 §3.3, first
// paragraph).
type unlimited struct{}

func (*unlimited) MayInject(Candidate, Local) bool { return true }
func (*unlimited) Injected(Candidate)              {}
func (*unlimited) Acked(Ack)                       {}
func (*unlimited) Nacked(Nack)                     {}
func (*unlimited) Limited() bool                   { return false }
