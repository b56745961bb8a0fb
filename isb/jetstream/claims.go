package jetstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

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
// rewritten (it expired, and another process may hold it now), or when no
// renewal has succeeded for a whole ClaimTTL (the server may have expired
// it while unreachable): the consumer then stops with isb.ErrClaimLost
// instead of reading beside a new owner.

// claim is the claimed keys of one consumer.
type claim struct {
	mu      sync.Mutex // renew and release
	b       *backendClaims
	group   string
	keys    []string
	stream  []string
	revs    []uint64
	renewed time.Time     // the last time every key was renewed (or created)
	lost    chan struct{} // closed once, by markLost
	isLost  bool          // guarded by mu

	releaseOnce sync.Once
	releaseErr  error
	backend     interface{ forget(*claim) bool } // the holder; forget reports whether it still held c
}

// Lost is closed once the claim is lost (see above).
func (c *claim) Lost() <-chan struct{} { return c.lost }

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
	c.b.log.Error("jetstream: claim lost", zap.String("group", c.group), zap.Strings("streams", c.stream),
		zap.String("why", why), zap.Error(err))
}

// backendClaims is what claims need of the backend, apart from its type
// parameter.
type backendClaims struct {
	kv      natsjs.KeyValue
	id      string
	timeout time.Duration
	log     *zap.Logger
}

func (b *Backend[T]) claimsOf() *backendClaims {
	return &backendClaims{kv: b.claims, id: b.id, timeout: b.cfg.requestTimeout, log: b.cfg.log}
}

// Claim makes this backend the only reader of partitions of group until
// the lease is released or lost, in every process: a partition claimed
// already is an error matching isb.ErrGroupInUse, and nothing is claimed.
func (b *Backend[T]) Claim(group string, partitions []int) (isb.Lease, error) {
	c := &claim{b: b.claimsOf(), group: group, lost: make(chan struct{}), renewed: time.Now(), backend: b}
	for _, p := range partitions {
		key := b.names.key(p, group)
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

// renew extends every claimed key's lease, and marks the claim lost when
// a key is gone or rewritten, or when renewals failed for a whole TTL.
func (c *claim) renew(ctx context.Context, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isLost {
		return
	}
	ok := true
	for i, key := range c.keys {
		rctx, cancel := context.WithTimeout(ctx, c.b.timeout)
		rev, err := c.b.kv.Update(rctx, key, []byte(c.b.id), c.revs[i])
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return // closing
			}
			if !transient(err) {
				// Expired and deleted, or taken over by another process:
				// it cannot be taken back.
				c.markLost("the claim's key is gone or another process holds it", err)
				return
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
		c.renewed = time.Now()
	case time.Since(c.renewed) >= ttl:
		c.markLost("no renewal reached the server for a whole ClaimTTL", nil)
	}
}

// renewLoop renews the claims held, every third of ClaimTTL.
func (b *Backend[T]) renewLoop() {
	t := time.NewTicker(b.cfg.claimTTL / 3)
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
		for _, c := range held {
			c.renew(b.ctx, b.cfg.claimTTL)
		}
	}
}
