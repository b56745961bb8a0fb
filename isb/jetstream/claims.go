package jetstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/isb"
)

// Membership: a consumer's partitions are claimed in the claim bucket,
// one key per group and partition holding the backend's id, created only
// if absent (so two processes never both claim one), renewed every
// ClaimTTL/3 and deleted when the consumer closes. The bucket's TTL
// (ClaimTTL) expires the claims of a process that died without closing.
//
// A claim is an isb.Lease. It is lost when a renewal finds the key gone or
// holding another process's id (it expired, and another process may hold
// it now): the consumer then stops with isb.ErrClaimLost instead of
// reading beside a new owner. When no renewal has succeeded for a whole
// ClaimTTL (the server unreachable or restarting, or its replies lost), the
// server may have expired the key: the claim is in doubt (Lease.Doubt) and
// the consumer reads nothing until a renewal reaches the server. The
// claim holds, and reading resumes, when that renewal proves nobody took
// the key meanwhile (renewKey): it is still at the claim's revision, or it
// holds this backend's id at a later one, or it expired so recently that
// another process's claim of it would still be on record. Losing the claim
// at once instead stopped processes that a server restart on a loaded
// machine had kept from renewing for 2 s, though nobody had taken their
// partitions, and only a restart of the process resumed them.

// claim is the claimed keys of one consumer.
type claim struct {
	mu      sync.Mutex // renew and release
	b       *backendClaims
	group   string
	keys    []string
	stream  []string
	revs    []uint64
	sent    []time.Time   // when the request that wrote revs[i] was sent
	lost    chan struct{} // closed once, by markLost
	isLost  bool          // guarded by mu
	doubted bool          // the doubt was logged; guarded by mu

	// The claim is in doubt from a TTL after confirmed, the time (since
	// epoch, so monotonic) the oldest of its keys' last writes was sent:
	// the server stamped that write later, so none of the keys can have
	// expired before. Doubt reads it without mu, which a renewal holds
	// across server requests.
	ttl       time.Duration
	epoch     time.Time
	confirmed atomic.Int64
	// doubt is non-nil while the claim is in doubt (set by Doubt, once it
	// finds confirmed a TTL old); closed and cleared when a renewal
	// settles the doubt or the claim is lost.
	doubt atomic.Pointer[chan struct{}]

	releaseOnce sync.Once
	releaseErr  error
	backend     interface{ forget(*claim) bool } // the holder; forget reports whether it still held c
}

// Lost is closed once the claim is lost (see above).
func (c *claim) Lost() <-chan struct{} { return c.lost }

// Doubt is non-nil while the claim is in doubt (see above).
func (c *claim) Doubt() <-chan struct{} {
	for {
		if p := c.doubt.Load(); p != nil {
			return *p
		}
		if !c.unconfirmed() {
			return nil
		}
		ch := make(chan struct{})
		if !c.doubt.CompareAndSwap(nil, &ch) {
			continue // another caller, or a settle, was first
		}
		if !c.unconfirmed() { // a renewal confirmed it meanwhile
			if c.doubt.CompareAndSwap(&ch, nil) {
				close(ch)
			}
			return nil
		}
		return ch
	}
}

// unconfirmed reports whether the server may have expired a key of the
// claim: a TTL has passed since confirmed.
func (c *claim) unconfirmed() bool {
	return time.Since(c.epoch)-time.Duration(c.confirmed.Load()) >= c.ttl
}

// confirm records that every key was written at or after the times in
// sent, and settles a doubt; mu is held.
func (c *claim) confirm() (wasInDoubt bool) {
	oldest := c.sent[0]
	for _, t := range c.sent[1:] {
		if t.Before(oldest) {
			oldest = t
		}
	}
	c.confirmed.Store(int64(oldest.Sub(c.epoch)))
	c.doubted = false
	return c.settle()
}

// settle ends a doubt, held or lost; mu is held.
func (c *claim) settle() (wasInDoubt bool) {
	if p := c.doubt.Swap(nil); p != nil {
		close(*p)
		return true
	}
	return false
}

// Release gives the partitions back, unless Close released them already.
func (c *claim) Release() error {
	c.releaseOnce.Do(func() {
		if c.backend.forget(c) {
			c.releaseErr = c.release()
		}
	})
	return c.releaseErr
}

// markLost closes lost once; mu is held.
func (c *claim) markLost(why string, err error) {
	if c.isLost {
		return
	}
	c.isLost = true
	close(c.lost)
	c.settle()
	c.b.log.Error("jetstream: claim lost", zap.String("group", c.group), zap.Strings("streams", c.stream),
		zap.String("why", why), zap.Error(err))
}

// backendClaims is what claims need of the backend, apart from its type
// parameter.
type backendClaims struct {
	kv      natsjs.KeyValue
	nc      *nats.Conn
	bucket  string
	id      string
	timeout time.Duration
	log     *zap.Logger
}

func (b *Backend[T]) claimsOf() *backendClaims {
	return &backendClaims{kv: b.claims, nc: b.nc, bucket: b.names.claims(), id: b.id, timeout: b.cfg.requestTimeout, log: b.cfg.log}
}

// Claim makes this backend the only reader of partitions of group until
// the lease is released or lost, in every process: a partition claimed
// already is an error matching isb.ErrGroupInUse, and nothing is claimed.
func (b *Backend[T]) Claim(group string, partitions []int) (isb.Lease, error) {
	c := &claim{b: b.claimsOf(), group: group, lost: make(chan struct{}), ttl: b.cfg.claimTTL, epoch: time.Now(), backend: b}
	for _, p := range partitions {
		key := b.names.key(p, group)
		sent := time.Now()
		ctx, cancel := context.WithTimeout(b.ctx, b.cfg.requestTimeout)
		rev, err := c.b.kv.Create(ctx, key, []byte(b.id))
		if errors.Is(err, natsjs.ErrKeyExists) {
			// Create's own check may have asked a replica behind its
			// leader (see freed.go): ask the leader.
			rev, err = b.createFreed(ctx, key, err)
		}
		cancel()
		if err != nil {
			if rerr := c.release(); rerr != nil {
				err = errors.Join(err, rerr)
			}
			if casConflict(err) {
				return nil, fmt.Errorf("%w: stream %q: group %q is read by an open consumer of another process (bucket %q, key %q)",
					isb.ErrGroupInUse, b.names.stream(p), group, b.names.claims(), key)
			}
			return nil, streamErr(b.names.stream(p), "claim", err)
		}
		c.keys, c.stream, c.revs = append(c.keys, key), append(c.stream, b.names.stream(p)), append(c.revs, rev)
		c.sent = append(c.sent, sent)
	}
	if len(c.keys) > 0 {
		c.confirm()
	}
	b.claimMu.Lock()
	if b.held == nil {
		b.held = make(map[*claim]struct{})
	}
	b.held[c] = struct{}{}
	b.claimMu.Unlock()
	return c, nil
}

// forget stops renewing c and reports whether the backend still held it
// (Close releases the claims it holds itself).
func (b *Backend[T]) forget(c *claim) bool {
	b.claimMu.Lock()
	defer b.claimMu.Unlock()
	_, held := b.held[c]
	delete(b.held, c)
	return held
}

// createFreed claims key by compare-and-set on its delete marker when the
// claims stream's leader says it is free; otherwise it returns exists, the
// error of the Create that failed.
func (b *Backend[T]) createFreed(ctx context.Context, key string, exists error) (uint64, error) {
	rev, free, err := freedRevision(ctx, b.nc, b.names.claims(), key)
	if err != nil {
		return 0, errors.Join(exists, err)
	}
	if !free {
		return 0, exists
	}
	return b.claims.Update(ctx, key, []byte(b.id), rev) // ErrKeyExists if claimed meanwhile
}

// release deletes the claimed keys, each only if it is still this claim's.
func (c *claim) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for i, key := range c.keys {
		ctx, cancel := context.WithTimeout(context.Background(), c.b.timeout)
		err := c.b.kv.Delete(ctx, key, natsjs.LastRevision(c.revs[i]))
		cancel()
		if err != nil && !casConflict(err) { // a conflict: taken over after it expired
			errs = append(errs, streamErr(c.stream[i], "release claim", err))
		}
	}
	c.keys = nil
	return errors.Join(errs...)
}

// renew extends every claimed key's lease and reports whether every
// renewal reached the server. It marks the claim lost when a key is gone
// or holds another process's id, and in doubt when renewals failed for a
// whole TTL; a renewal that succeeds settles a doubt.
func (c *claim) renew(ctx context.Context) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isLost {
		return true
	}
	ok := true
	for i := range c.keys {
		rev, err := c.renewKey(ctx, i)
		if err != nil {
			if ctx.Err() != nil {
				return true // closing
			}
			if !transient(err) {
				// Expired and deleted, or taken over by another process:
				// it cannot be taken back.
				c.markLost("the claim's key is gone or another process holds it", err)
				return true
			}
			ok = false
			c.b.log.Warn("jetstream: claim not renewed", zap.String("stream", c.stream[i]),
				zap.String("group", c.group), zap.Error(err))
			continue
		}
		c.revs[i] = rev
	}
	switch {
	case ok:
		if c.confirm() {
			c.b.log.Info("jetstream: claim confirmed: reading resumes", zap.String("group", c.group),
				zap.Strings("streams", c.stream))
		}
	case !c.doubted && c.Doubt() != nil:
		c.doubted = true
		c.b.log.Warn("jetstream: claim in doubt: no renewal reached the server for a whole ClaimTTL; reading paused until one does",
			zap.String("group", c.group), zap.Strings("streams", c.stream), zap.Duration("claimTTL", c.ttl))
	}
	return ok
}

// renewKey renews the claim's i-th key at its revision. On a conflict it
// asks the claims stream's leader, and renews anyway in two cases where
// nobody else can have held the key since:
//   - it holds this backend's id at a later revision: a renewal the server
//     applied but whose reply was lost (a timeout, a reconnect). Only this
//     backend writes its id, and only while it holds the claim;
//   - it has no message at all, and the last write of it was sent less
//     than two TTLs ago: it expired while the server could not be reached
//     (a restart). Another process could claim it only once it expired, a
//     TTL after that write at the earliest, and whatever that process wrote
//     (its claim, the delete marker of its release) would still be there,
//     for a TTL more.
//
// Anything else is the conflict: the claim is lost.
func (c *claim) renewKey(ctx context.Context, i int) (uint64, error) {
	// A renewal waits a third of the TTL at most (RequestTimeout if
	// shorter): one that hung for the 5 s RequestTimeout through a server
	// restart left the claim unrenewed past the two TTLs that prove an
	// expired key free, where renewals retried every TTL/30 catch the
	// server as soon as it is back.
	rctx, cancel := context.WithTimeout(ctx, min(c.b.timeout, c.ttl/3))
	defer cancel()
	sent := time.Now()
	rev, err := c.b.kv.Update(rctx, c.keys[i], []byte(c.b.id), c.revs[i])
	if err == nil {
		c.sent[i] = sent
		return rev, nil
	}
	if !casConflict(err) {
		return 0, err
	}
	val, cur, live, lerr := leaderEntry(rctx, c.b.nc, c.b.bucket, c.keys[i])
	switch {
	case lerr != nil:
		return 0, lerr // transient or not, as the read says
	case live && string(val) == c.b.id:
		sent = time.Now()
		rev, err = c.b.kv.Update(rctx, c.keys[i], []byte(c.b.id), cur)
	case !live && cur == 0 && time.Since(c.sent[i]) < 2*c.ttl:
		sent = time.Now()
		rev, err = c.b.kv.Create(rctx, c.keys[i], []byte(c.b.id))
		if err == nil {
			c.b.log.Warn("jetstream: claim expired while the server could not be reached, and nobody took it: claimed again",
				zap.String("stream", c.stream[i]), zap.String("group", c.group))
		}
	default:
		return 0, err
	}
	if err == nil {
		c.sent[i] = sent
	}
	return rev, err
}

// renewLoop renews the claims held, every third of ClaimTTL, and every
// thirtieth while a renewal fails (so that a doubt settles soon after the
// server answers again).
func (b *Backend[T]) renewLoop() {
	t := time.NewTimer(b.cfg.claimTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
		b.claimMu.Lock()
		held := make([]*claim, 0, len(b.held))
		for c := range b.held {
			held = append(held, c)
		}
		b.claimMu.Unlock()
		next := b.cfg.claimTTL / 3
		for _, c := range held {
			if !c.renew(b.ctx) {
				next = b.cfg.claimTTL / 30
			}
		}
		t.Reset(next)
	}
}
