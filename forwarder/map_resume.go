package forwarder

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/runnel-dev/runnel/internal/origin"
	"github.com/runnel-dev/runnel/vertex"
)

// A map that writes nothing twice.
//
// A map replica acknowledges an input once its outputs are durable, and
// its reader commits the input some time later: a crash in between makes
// it read the input again after the restart and write its outputs again,
// under new offsets of the buffers downstream, where no reader can tell
// them from new data (a reduce would count them twice; its WAL deduplicates
// by the offsets it read). IDs cannot tell them apart either: a map's
// outputs share their input's ID (vertex.Derive), all outputs of one input
// alike. So on durable storage every record a map writes carries its
// origin (internal/origin: the vertex, and the input partition, offset and
// output index it was made of, a field of the message envelope), and the
// map finds after a restart what it wrote, in the buffers themselves:
//
//   - While it runs, each replica keeps what it wrote for inputs whose
//     commit is not yet durable in its output buffers, even once read and
//     committed downstream (isb.Topic.Retain, a hold per replica). When it
//     reads a batch it notes each output partition's published tail (the
//     batch's records lie above: it writes them later); after its reader
//     committed, it releases the batches the durable commit covers and
//     moves its holds to the oldest tails of the batches left, or to the
//     tails now when none is left (mapAnchors). Durable first, then the
//     hold: with commits persisted in groups (pipeline.CommitInterval) a
//     hold moves only past what a persisted commit covers.
//   - On restart, before any replica reads, the pipeline reads each output
//     partition from its head (everything from the holds on was retained)
//     and notes every record of this vertex whose input lies at or past its
//     partition's durable commit (MapResume.Note): those inputs will be
//     read again. They stay held (a hold of the vertex) until the replicas'
//     durable commits pass them, so a second crash finds them again.
//   - A replica that reads such an input again maps it and writes to each
//     edge only the outputs whose index was not found there (a crash may
//     cut an input's outputs between two of them or two edges); an input
//     found whole writes nothing and is acknowledged at once.
//
// Every input a replayable source hands over once therefore reaches the
// buffers downstream once, and a reduce there counts it once. This assumes
// a deterministic map function: an input mapped again must give the same
// outputs in the same order. A function that does not gets at least once
// for the outputs it did not give the first time (their indices were not
// found), and the outputs it gave the first time stand (the restarted map
// does not write an output whose index it found, whatever it computes for
// it now). Outputs of a map-stream or batch-map vertex carry no origin:
// they are delivered at least once.
//
// The scan reads what the holds retained: at most what the map wrote since
// the oldest durable commit of its replicas, plus what storage keeps
// anyway (whole segments), and a restart costs that read once.

// MapResume is what the replicas of a map vertex share on durable storage
// (see RunResumedMap): the outputs an earlier run wrote for inputs not yet
// durably committed, and what each replica needs to hold what it writes.
type MapResume struct {
	// Vertex is the map vertex: its records carry it as their writer.
	Vertex string
	// Parts is each edge's partition count, in the order of the edges
	// passed to RunResumedMap; the layout of Tails and Retain's index is
	// every partition of the first edge, then of the next.
	Parts []int
	// Tails fills dst with each output partition's published tail.
	Tails func(dst []int64)
	// Retain holds output partition i (in the layout of Tails) from offset
	// on for holder (isb.Topic.Retain of its edge's topic).
	Retain func(holder string, i int, offset int64) error
	// Durable returns the vertex's commit of input partition p as storage
	// persisted it (what a restart resumes from).
	Durable func(p int) (int64, error)

	found   map[int]*foundPart // by input partition; read-only once held
	commits map[int]int64      // durable commits of the scanned partitions, then past the highest found input
	lowest  []int64            // per output partition, the lowest found record (MaxInt64: none)
	held    atomic.Bool        // the found records are held (hold to release)
	mu      sync.Mutex         // serializes releaseFound
}

// foundPart is what was found of one input partition's outputs.
type foundPart struct {
	max int64               // the highest input offset found
	in  map[int64][]edgeOut // by input offset
}

// edgeOut is one output found: its index among its input's outputs, on
// the edge of that index.
type edgeOut struct{ edge, index int32 }

// Note records the record at offset at of partition part of edge, whose
// origin is o (nil: it has none): an output of this vertex whose input is
// at or past its partition's durable commit, and will be read again, is
// found. Call it for every record the scan reads, then Hold; it is not
// safe for concurrent use.
func (m *MapResume) Note(edge, part int, at int64, o *origin.Origin) error {
	if o == nil || o.Writer != m.Vertex {
		return nil
	}
	if m.found == nil {
		m.found, m.commits = map[int]*foundPart{}, map[int]int64{}
		m.lowest = make([]int64, m.size())
		for i := range m.lowest {
			m.lowest[i] = math.MaxInt64
		}
	}
	c, ok := m.commits[o.Partition]
	if !ok {
		var err error
		if c, err = m.Durable(o.Partition); err != nil {
			return fmt.Errorf("the commit of input partition %d: %w", o.Partition, err)
		}
		m.commits[o.Partition] = c
	}
	if o.Offset < c {
		return nil // its input is committed: it is not read again
	}
	f := m.found[o.Partition]
	if f == nil {
		f = &foundPart{in: map[int64][]edgeOut{}}
		m.found[o.Partition] = f
	}
	f.in[o.Offset] = append(f.in[o.Offset], edgeOut{int32(edge), int32(o.Index)})
	f.max = max(f.max, o.Offset)
	k := m.flat(edge, part)
	m.lowest[k] = min(m.lowest[k], at)
	return nil
}

// Found returns how many outputs Note found, and of how many inputs.
func (m *MapResume) Found() (outputs, inputs int) {
	for _, f := range m.found {
		inputs += len(f.in)
		for _, outs := range f.in {
			outputs += len(outs)
		}
	}
	return outputs, inputs
}

// Hold holds the found records until the durable commits pass their
// inputs. Call it once, after the scan, before any vertex runs.
func (m *MapResume) Hold() error {
	// From here on commits is, per input partition with found inputs, the
	// commit that lets the found records go.
	clear(m.commits)
	for p, f := range m.found {
		m.commits[p] = f.max + 1
	}
	var errs []error
	for k, off := range m.lowest {
		if off == math.MaxInt64 {
			continue
		}
		errs = append(errs, m.Retain(m.foundHolder(), k, off))
		m.held.Store(true)
	}
	return errors.Join(errs...)
}

// releaseFound removes the found records' hold once every input partition
// with found inputs is durably committed past them.
func (m *MapResume) releaseFound() error {
	if !m.held.Load() {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.held.Load() {
		return nil
	}
	for p, end := range m.commits {
		c, err := m.Durable(p)
		if err != nil || c < end {
			return err
		}
	}
	var errs []error
	for k, off := range m.lowest {
		if off != math.MaxInt64 {
			errs = append(errs, m.Retain(m.foundHolder(), k, math.MaxInt64))
		}
	}
	m.held.Store(false)
	return errors.Join(errs...)
}

func (m *MapResume) foundHolder() string { return "map/" + m.Vertex + "/found" }

// size is the number of output partitions: every partition of every edge.
func (m *MapResume) size() int {
	n := 0
	for _, p := range m.Parts {
		n += p
	}
	return n
}

// flat is the index of partition part of edge in the layout of Tails.
func (m *MapResume) flat(edge, part int) int {
	k := part
	for _, p := range m.Parts[:edge] {
		k += p
	}
	return k
}

// has reports whether output o of its input was found on edge.
func (m *MapResume) has(edge int, o *origin.Origin) bool {
	f := m.found[o.Partition]
	if f == nil {
		return false
	}
	for _, e := range f.in[o.Offset] {
		if int(e.edge) == edge && int(e.index) == o.Index {
			return true
		}
	}
	return false
}

// mapStamps gives a map handler's outputs their origins: one handler's
// scratch, reused chunk after chunk. An origin must live until its message
// is encoded, which a write or a stage does before it returns.
type mapStamps struct {
	vertex string
	orgs   []origin.Origin
}

// reset makes the scratch reusable: call it before mapping a chunk, once
// the previous chunk's outputs are written (or staged).
func (s *mapStamps) reset() { s.orgs = s.orgs[:0] }

// stampOutputs gives outs, the outputs of the input read at in, in order,
// their origins (s nil: nothing to do).
func stampOutputs[T any](s *mapStamps, outs []vertex.Message[T], partition int, offset int64) {
	if s == nil {
		return
	}
	for k := range outs {
		// A pointer into orgs survives a growth of orgs: the old array
		// keeps the values, and nothing writes to it again before reset.
		s.orgs = append(s.orgs, origin.Origin{Writer: s.vertex, Partition: partition, Offset: offset, Index: k})
		*origin.Of(&outs[k]) = &s.orgs[len(s.orgs)-1]
	}
}

// skipFound returns the Writer's skip function for the outputs of chunk
// (nil: none of its inputs has found outputs, write everything).
func skipFound[In, Out any](m *MapResume, chunk []inflight[In]) func(edge int, msg *vertex.Message[Out]) bool {
	if m == nil || m.found == nil || len(chunk) == 0 {
		return nil
	}
	// A chunk is one partition's ascending offsets.
	if f := m.found[chunk[0].partition]; f == nil || chunk[0].offset > f.max {
		return nil
	}
	return func(edge int, msg *vertex.Message[Out]) bool {
		o := *origin.Of(msg)
		return o != nil && m.has(edge, o)
	}
}

// mapAnchors is one map replica's hold on its output partitions: the
// batches it read whose commit is not yet durable, each with the output
// tails when it was read.
type mapAnchors struct {
	res    *MapResume
	holder string

	mu      sync.Mutex
	batches []anchorBatch // in read order: their snapshots only grow
	free    [][]int64     // snapshots of released batches, for reuse
	held    []int64       // the holds set, in the layout of Tails
	tails   []int64       // scratch of moveHolds, under mu
	parts   map[int]int64 // scratch of moveHolds: durable commits
}

// anchorBatch is a read batch of partition part up to end, and the output
// tails when it was read: its outputs lie at or above them.
type anchorBatch struct {
	part int
	end  int64
	snap []int64
}

// newMapAnchors returns replica's anchors, holding every output partition
// from its tail now: the replica wrote nothing yet.
func newMapAnchors(res *MapResume, replica int) (*mapAnchors, error) {
	a := &mapAnchors{res: res, holder: "map/" + res.Vertex + "/" + strconv.Itoa(replica), parts: map[int]int64{}}
	n := res.size()
	a.held, a.tails = make([]int64, n), make([]int64, n)
	res.Tails(a.held)
	var errs []error
	for k, off := range a.held {
		errs = append(errs, res.Retain(a.holder, k, off))
	}
	return a, errors.Join(errs...)
}

// register records a batch of partition read up to end, before it is
// handed on: what the replica writes for it lies above the tails now.
func (a *mapAnchors) register(partition int, end int64) {
	a.mu.Lock()
	var snap []int64
	if k := len(a.free); k > 0 {
		snap, a.free = a.free[k-1], a.free[:k-1]
	} else {
		snap = make([]int64, len(a.held))
	}
	a.mu.Unlock()
	a.res.Tails(snap)
	a.mu.Lock()
	a.batches = append(a.batches, anchorBatch{part: partition, end: end, snap: snap})
	a.mu.Unlock()
}

// committed runs after the reader committed: it releases the batches the
// durable commits cover and moves the holds to the oldest snapshot left
// (the tails, read first, when none is left), then lets the found records
// go once the commits passed them.
func (a *mapAnchors) committed() error {
	// Tails first: a batch registered after they are read lies above them;
	// one registered before is in batches when they are scanned below.
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.batches) == 0 {
		return a.res.releaseFound()
	}
	clear(a.parts)
	for _, b := range a.batches {
		if _, ok := a.parts[b.part]; ok {
			continue
		}
		c, err := a.res.Durable(b.part)
		if err != nil {
			return err
		}
		a.parts[b.part] = c
	}
	a.res.Tails(a.tails)
	kept := a.batches[:0]
	for _, b := range a.batches {
		if a.parts[b.part] >= b.end {
			a.free = append(a.free, b.snap)
			continue
		}
		kept = append(kept, b)
	}
	clear(a.batches[len(kept):])
	a.batches = kept
	if len(kept) > 0 {
		lowest(a.tails, kept[0].snap)
	}
	var errs []error
	for k, off := range a.tails {
		if off > a.held[k] {
			errs = append(errs, a.res.Retain(a.holder, k, off))
			a.held[k] = off
		}
	}
	errs = append(errs, a.res.releaseFound())
	return errors.Join(errs...)
}
