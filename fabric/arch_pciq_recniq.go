package fabric

// PCIQ enhanced with RECN-IQ (paper 003 §2.8-§2.9), and RECN-IQ on the
// CIOQ switch it is compared with (Fig. 2.18): RECN-IQ's input stage
// (arch_recniq.go: cold queues, SAQs with their CAM lines, detection at
// the head of a cold queue, post-processing, Xon/Xoff, CAM lines at the
// outputs) on another datapath (recnIQDatapath).
//
// On pciq-K every read port of an input memory has its own cold queue per
// lane (pciq's queue of that sub-crossbar) and its own max_saqs SAQs
// (§2.9: "two or four SAQs per read port"; §2.10: each first-level
// arbiter chooses among "Q + S" queues of its read port). A SAQ belongs to
// the read port that reaches the output of its path's first turn, so the
// congested point a cold queue's head names at detection is always one of
// that read port's outputs, the post-processing moves packets only
// between queues of one read port, and the read port's arbiter sees the
// cold queue and the SAQs alike. The output ports keep K x max_saqs CAM
// lines, as many as the SAQs of the input downstream whose Xoff they
// record.

// Cold queues and SAQ groups of pciq-K: the queue of a lane and a
// sub-crossbar is the cold queue, and each read port is a group.
func (a *pciqArch) coldQueue(s *Switch, vl, po int) int { return vl*a.k + a.group(s, po) }
func (a *pciqArch) saqGroups() int                      { return a.k }
func (a *pciqArch) saqGroup(s *Switch, po int) int      { return a.group(s, po) }

// pciqRECNIQArch is pciq-K+recn-iq. It is the RECN-IQ stage on the pciq-K
// datapath, and it tells the hrr allocator the read port of every output
// (readPorter) so that every read port's arbiter requests once.
type pciqRECNIQArch struct {
	*recnIQArch
	pc *pciqArch
}

func (a *pciqRECNIQArch) readPort(s *Switch, po int) int { return a.pc.readPort(s, po) }

func newPCIQRECNIQ(k int) func(f *Fabric) switchArch {
	return func(f *Fabric) switchArch {
		pc := newPCIQ(k)(f).(*pciqArch)
		return &pciqRECNIQArch{recnIQArch: newRECNIQOn(f, pc), pc: pc}
	}
}

// newCIOQRECNIQ is cioq+recn-iq: the cioq datapath (one read port, a
// crossbar into output buffers) with RECN-IQ's input stage, Fig. 2.18's
// "CIOQ architecture when RECN-IQ is used".
func newCIOQRECNIQ(f *Fabric) switchArch { return newRECNIQOn(f, &cioqArch{vlQueues{f}}) }
