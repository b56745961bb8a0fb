package jetstream

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/isb"
)

// log is one partition: one stream, offsets = stream sequence - 1, or on
// a packed stream (sequence-1)<<16 | index of the item in its frame.
//
// What the process knows of the stream (head, tail, every group's commit)
// is kept here and moves forward only: own appends and reads, the
// announcements of other processes' appends, the watch of the commit
// bucket and the periodic refresh all raise it. Tail and the usage check
// therefore cost no round trip.
type log[T any] struct {
	b      *Backend[T]
	p      int
	stream string
	shift  uint // b.cfg.shift: offset = (sequence-1)<<shift | index

	head atomic.Int64
	tail atomic.Int64
	seq  atomic.Uint64 // message ids: {backend id}.{p}.{seq}
	wake atomic.Pointer[func()]
	// deleted is set once the stream is found deleted: appends and reads
	// then fail with ErrStreamDeleted.
	deleted atomic.Bool

	// cmu guards commits: every group's commit as the bucket holds it,
	// for usage, retention and Groups, with the bucket revision it is as
	// of (the compare-and-set of this process's next commit, and the
	// order in which what the watch delivers late is applied).
	cmu     sync.Mutex
	commits map[string]entry

	// frames counts the items of a packed stream's frames (usage.go);
	// ahead keeps the messages a read fetched past what it returned
	// (read.go).
	frames frameIndex
	ahead  readAhead

	s        natsjs.Stream
	purged   uint64       // below this sequence retention deleted (refresher only)
	released atomic.Int64 // the highest offset Release was given

	// seal: appends hold smu for reading; Seal cancels ctx (ending the
	// retries in flight), then takes smu to wait for them.
	smu    sync.RWMutex
	sealed bool
	ctx    context.Context
	cancel context.CancelFunc
}

func newLog[T any](ctx context.Context, b *Backend[T], p int, s natsjs.Stream) (*log[T], error) {
	l := &log[T]{b: b, p: p, stream: b.names.stream(p), shift: b.cfg.shift, s: s, commits: make(map[string]entry)}
	l.ctx, l.cancel = context.WithCancel(b.ctx)
	if err := l.observe(ctx, s.CachedInfo().State); err != nil {
		l.cancel()
		return nil, streamErr(l.stream, "open", err)
	}
	return l, nil
}

// observe raises head and tail to a stream state read from the server.
// On a packed stream the tail is the end of the last frame, whose count
// it reads (one direct get) when the stream's last sequence is past what
// this process knows.
func (l *log[T]) observe(ctx context.Context, st natsjs.StreamState) error {
	if st.FirstSeq > 0 {
		raise(&l.head, join(st.FirstSeq, 0, l.shift))
	}
	if st.LastSeq == 0 {
		return nil
	}
	if !l.b.cfg.packed() {
		l.raiseTail(int64(st.LastSeq))
		return nil
	}
	if t := l.tail.Load(); t > 0 {
		if known, _ := split(t-1, l.shift); known >= st.LastSeq {
			return nil
		}
	}
	n, err := l.lastCount(ctx, st.LastSeq)
	if err != nil {
		return err
	}
	// A count not known (a replica behind answered) is at least one item:
	// the tail is then a lower bound, raised to the frame's end when a
	// read parses it.
	l.raiseTail(join(st.LastSeq, max(n, 1), l.shift))
	return nil
}

// raise sets v to at least x and reports whether it changed.
func raise(v *atomic.Int64, x int64) bool {
	for {
		old := v.Load()
		if x <= old {
			return false
		}
		if v.CompareAndSwap(old, x) {
			return true
		}
	}
}

// raiseTail sets the tail to at least tail (the stream's last sequence);
// when it moves, the topic's waiters wake.
func (l *log[T]) raiseTail(tail int64) bool {
	if !raise(&l.tail, tail) {
		return false
	}
	l.notify()
	return true
}

func (l *log[T]) notify() {
	if w := l.wake.Load(); w != nil {
		(*w)()
	}
}

// Watch registers the topic's wake-up, called when another process's
// append or commit becomes known here.
func (l *log[T]) Watch(wake func()) { l.wake.Store(&wake) }

// Head is the earliest offset a reader can count on: the stream's first
// sequence as last seen, or what the topic released below when that is
// higher. Release only records the offset and a refresh purges later, so
// a group started at the stream's first sequence before that purge would
// read offsets gone a moment later (ErrOutOfRange); nothing below a
// Release is ever read again.
func (l *log[T]) Head() int64 {
	return min(max(l.head.Load(), l.released.Load()), l.tail.Load())
}

// Tail is the offset after the last message known to be stored.
func (l *log[T]) Tail() int64 { return l.tail.Load() }

// Count is how many items lie in [from, to): an offset difference on an
// unpacked stream, the frames' counts on a packed one, as this process
// knows them (a frame not known yet counts as one item).
func (l *log[T]) Count(from, to int64) int64 {
	if !l.b.cfg.packed() || to <= from {
		return to - from
	}
	return l.frames.count(from, to, l.shift)
}

// markDeleted records that the stream is gone. Readers must learn it, but
// a Pull only reads a partition whose tail is past its position, so the
// tail moves one past what was stored: the next Read reports
// ErrStreamDeleted instead of the Pull waiting forever.
func (l *log[T]) markDeleted() {
	if l.deleted.Swap(true) {
		return
	}
	l.b.cfg.log.Error("jetstream: stream deleted under an open topic", zap.String("stream", l.stream))
	l.tail.Add(1)
	l.notify()
}

// deletedErr is the error of an operation on a deleted stream.
func (l *log[T]) deletedErr(op string) error {
	return &StreamError{Stream: l.stream, Op: op, Kind: ErrStreamDeleted}
}

// low is the lowest commit over the groups known to the bucket, or the
// head when there is none: what the usage and retention count from.
func (l *log[T]) low() (int64, bool) { return l.lowest(true) }

// lowest is low over the groups that read, or (holds) with the stored
// holds of writers too (isb.HoldPrefix, see isb.Topic.Retain): those keep
// what they hold from deletion, but use no capacity.
func (l *log[T]) lowest(holds bool) (int64, bool) {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	first, low := true, int64(0)
	for g, e := range l.commits {
		if !holds && strings.HasPrefix(g, isb.HoldPrefix) {
			continue
		}
		if !e.tomb && (first || e.off < low) {
			low, first = e.off, false
		}
	}
	if first {
		return l.Head(), false
	}
	return low, true
}

// full reports whether n more items would take the partition past its
// usage limit: uncommitted by the slowest group (or retained, without a
// group) as this process knows it. A batch larger than the limit fits an
// empty partition only.
func (l *log[T]) full(n int) bool {
	used := l.used()
	return used > 0 && used+int64(n) > l.b.cfg.usageLimit
}

// used is how many items the slowest group has not committed (or are
// retained, without a group), as this process knows it: an offset
// difference on an unpacked stream, the frames' counts on a packed one.
func (l *log[T]) used() int64 {
	low, _ := l.lowest(false)
	tail := l.tail.Load()
	if !l.b.cfg.packed() {
		return tail - low
	}
	return l.frames.used(low, tail, l.shift)
}

// entry is what this process knows of one group's key of the partition.
type entry struct {
	off  int64
	rev  uint64 // bucket revision it reflects
	tomb bool   // deleted here; the watch has not delivered the deletion yet
}

// learnCommit records a commit the bucket holds at revision rev, unless
// something newer is known: the watch delivers in revision order but late,
// after this process's own writes.
func (l *log[T]) learnCommit(group string, off int64, rev uint64) {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	if e, ok := l.commits[group]; ok && (e.tomb || rev <= e.rev) {
		return
	}
	l.commits[group] = entry{off: off, rev: rev}
}

// learnDelete records that the bucket deleted group's key at revision rev.
func (l *log[T]) learnDelete(group string, rev uint64) {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	if e, ok := l.commits[group]; ok && !e.tomb && rev <= e.rev {
		return // recreated since
	}
	delete(l.commits, group)
}

// cas is the revision to compare-and-set group's key against, 0 when the
// key is not known to hold a commit (it is then created).
func (l *log[T]) cas(group string) uint64 {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	if e, ok := l.commits[group]; ok && !e.tomb {
		return e.rev
	}
	return 0
}

// request runs f with a fresh request timeout, retrying transient failures
// until RetryTimeout or until parent ends: the log's context (sealed when
// the topic closes) for appends and reads, the backend's (closed after the
// topic waited for its consumers) for commits, so a commit racing with
// Topic.Close still lands.
func (l *log[T]) request(parent context.Context, op string, f func(ctx context.Context) error) error {
	deadline := time.Now().Add(l.b.cfg.retryTimeout)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		ctx, cancel := context.WithTimeout(parent, l.b.cfg.requestTimeout)
		err := f(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if parent.Err() != nil {
			return isb.ErrClosed
		}
		l.b.cfg.failed(op, err)
		if !transient(err) || time.Now().After(deadline) {
			return streamErr(l.stream, op, err)
		}
		l.b.cfg.log.Warn("jetstream: retrying", zap.String("stream", l.stream), zap.String("op", op), zap.Error(err))
		select {
		case <-time.After(wait):
		case <-parent.Done():
			return isb.ErrClosed
		}
	}
}

// bound returns a context that ends with ctx and with base (the log's
// own, sealed when the topic closes, for reads; the backend's, closed after
// the topic waited for its consumers, for commits): a call ends when either
// does. With a ctx that never ends it is base itself, without an
// allocation.
func bound(ctx, base context.Context) (context.Context, func()) {
	if ctx.Done() == nil {
		return base, func() {}
	}
	c, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(base, cancel)
	return c, func() { stop(); cancel() }
}

// Commit stores group's commit in the bucket by compare-and-set, so that
// a stale commit of another process never moves it back. It ends when ctx
// ends (the consumer closes) or after RetryTimeout; it is not ended by the
// log's seal, so a commit racing with Topic.Close still lands.
func (l *log[T]) Commit(ctx context.Context, group string, offset int64) error {
	if offset > l.Tail() {
		return &StreamError{Stream: l.stream, Op: "commit", Kind: isb.ErrOutOfRange,
			Err: errors.New("offset " + strconv.FormatInt(offset, 10) + " past the tail " + strconv.FormatInt(l.Tail(), 10))}
	}
	key := l.b.names.key(l.p, group)
	val := strconv.AppendInt(nil, offset, 10)
	parent, stop := bound(ctx, l.b.ctx)
	defer stop()
	return l.request(parent, "commit", func(ctx context.Context) error {
		var deleted uint64 // the revision of the key's delete marker, as the leader last said
		for {
			var err error
			var next uint64
			switch rev := l.cas(group); {
			case rev != 0:
				next, err = l.b.commits.Update(ctx, key, val, rev)
			case deleted != 0:
				// Not Create: on a key with a delete marker, nats.go's
				// Create reads the marker's revision with a direct get,
				// which a follower behind the purge may answer (see
				// freed.go), so it could fail again and again on R3.
				next, err = l.b.commits.Update(ctx, key, val, deleted)
			default:
				next, err = l.b.commits.Create(ctx, key, val)
			}
			if err == nil {
				l.cmu.Lock()
				l.commits[group] = entry{off: offset, rev: next}
				l.cmu.Unlock()
				return nil
			}
			if !casConflict(err) {
				return err
			}
			// Another process wrote it since: keep the higher commit.
			stored, rev, ok, err := l.get(ctx, group)
			if err != nil {
				return err
			}
			deleted = 0
			if !ok {
				deleted = rev
			}
			l.cmu.Lock()
			if ok {
				l.commits[group] = entry{off: stored, rev: rev}
			} else {
				delete(l.commits, group)
			}
			l.cmu.Unlock()
			if ok && stored >= offset {
				return nil
			}
		}
	})
}

// get reads group's commit from the bucket: ok false when there is none,
// with the revision of its delete marker (rev 0: never written or expired).
func (l *log[T]) get(ctx context.Context, group string) (off int64, rev uint64, ok bool, err error) {
	// From the leader (see leaderEntry): a follower may still hold a
	// commit that DeleteGroup purged, or one another process has moved.
	v, rev, live, err := leaderEntry(ctx, l.b.nc, l.b.names.bucket, l.b.names.key(l.p, group))
	if err != nil {
		return 0, 0, false, err
	}
	if !live {
		return 0, rev, false, nil
	}
	off, err = strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, 0, false, &StreamError{Stream: l.stream, Op: "commit", Err: errors.New("commit of group in bucket is not an offset: " + strconv.Quote(string(v)))}
	}
	return off, rev, true, nil
}

// Committed reads group's commit from the bucket, so that a member
// joining in this process resumes from what another process committed.
// A bucket that cannot be read (after RetryTimeout) is an error: the join
// fails rather than start the member where it would read again what the
// group consumed.
func (l *log[T]) Committed(group string) (int64, bool, error) {
	var off int64
	var ok bool
	err := l.request(l.b.ctx, "read commit", func(ctx context.Context) error {
		var err error
		var rev uint64
		if off, rev, ok, err = l.get(ctx, group); err == nil && ok {
			l.learnCommit(group, off, rev)
		}
		return err
	})
	if err != nil {
		return l.Head(), false, err
	}
	if !ok {
		return l.Head(), false, nil
	}
	return off, true, nil
}

// deleteGroup purges group's key of this partition.
func (l *log[T]) deleteGroup(group string) error {
	err := l.request(l.b.ctx, "delete group", func(ctx context.Context) error {
		return l.b.commits.Purge(ctx, l.b.names.key(l.p, group))
	})
	if err != nil {
		return err
	}
	l.cmu.Lock()
	l.commits[group] = entry{tomb: true}
	l.cmu.Unlock()
	return nil
}

// Release lets the refresher delete messages below offset; it deletes
// them only below every group's commit the bucket holds, so a group of
// another process keeps its data.
func (l *log[T]) Release(offset int64) error {
	// Kick the refresher once an eighth of MaxMsgs can go: the stream's
	// own limit counts what is retained, so retention must keep up with
	// the consumers, not wait for the next refresh.
	rel, _ := split(offset, l.shift)
	head, _ := split(l.head.Load(), l.shift)
	if raise(&l.released, offset) && rel-head >= uint64(max(1, l.b.cfg.maxMsgs/8)) {
		select {
		case l.b.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// Seal ends the appends in flight (their retries stop with ErrClosed) and
// fails every later one with ErrClosed. Reads in flight end too: the
// topic seals its logs only when it closes.
func (l *log[T]) Seal() {
	l.cancel()
	l.smu.Lock()
	l.sealed = true
	l.smu.Unlock()
}
