package jetstream_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/isb/jetstream"
)

// A claim whose key disappears from the claim bucket (it expired while
// the process could not renew it, and may belong to another process now)
// is lost: the consumer's blocked Pull ends with isb.ErrClaimLost, its
// commits are refused, and another member can claim the partitions.
func TestClaimLostStopsConsumer(t *testing.T) {
	ctx := testCtx(t)
	srv := natstest.Start(t)
	nc := srv.Connect()
	prefix := freshPrefix()
	bucket := fmt.Sprintf("claimlost%d", prefixes.Add(1))
	// Renewals every 100 ms: the loss is found within one.
	opts := []jetstream.Option{jetstream.Bucket(bucket), jetstream.ClaimTTL(300 * time.Millisecond)}
	tp := mustTopic(t, nc, prefix, nil, opts...)
	if err := tp.Producer(nil).Produce(ctx, isbtest.Item{Seq: 0}); err != nil {
		t.Fatal(err)
	}
	c, err := tp.JoinGroup("g", 0, 1, isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if b, err := c.Pull(ctx); err != nil || len(b.Items) != 1 {
		t.Fatalf("Pull = %v, %v; want 1 item", b.Items, err)
	}
	kv, err := jsOf(t, nc).KeyValue(ctx, bucket+"-claims")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.Keys(ctx)
	if err != nil || len(keys) != 1 {
		t.Fatalf("claim keys = %v, %v; want one", keys, err)
	}
	if err := kv.Delete(ctx, keys[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pull(ctx); !errors.Is(err, isb.ErrClaimLost) {
		t.Fatalf("Pull after the claim's key was deleted = %v, want ErrClaimLost", err)
	}
	if err := c.CommitTo(0, 1); !errors.Is(err, isb.ErrClaimLost) {
		t.Fatalf("CommitTo after the claim was lost = %v, want ErrClaimLost", err)
	}
	other := mustTopic(t, srv.Connect(), prefix, nil, opts...)
	c2, err := other.JoinGroup("g", 0, 1)
	if err != nil {
		t.Fatalf("another process joins after the claim was lost: %v", err)
	}
	defer c2.Close()
	if b, err := c2.Pull(ctx); err != nil || b.Offset != 0 || len(b.Items) != 1 {
		t.Fatalf("Pull of the new member = offset %d %v, %v; want offset 0, one item (nothing was committed)", b.Offset, b.Items, err)
	}
}

// A claim whose key expired while the server was down, for longer than
// ClaimTTL, holds when the server is back and nobody took the key: the
// renewal after the outage finds it gone with nothing written since and
// claims it again, so the consumer reads on (it was lost before, and only
// a restart of the process resumed the partitions), and another member
// is still refused. After an outage of over two TTLs that proof is gone
// (another process could have claimed and released the key, and its
// delete marker expired too): the claim is lost.
func TestClaimRidesOutServerOutage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ttl      time.Duration
		down     time.Duration
		wantLost bool
	}{
		{"expired and free: claimed again", 2 * time.Second, 2500 * time.Millisecond, false},
		{"down over two TTLs: lost", 600 * time.Millisecond, 2 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			srv := natstest.Start(t)
			nc := srv.Connect()
			prefix := freshPrefix()
			opts := []jetstream.Option{jetstream.Bucket(fmt.Sprintf("outage%d", prefixes.Add(1))), jetstream.ClaimTTL(tc.ttl)}
			tp := mustTopic(t, nc, prefix, nil, opts...)
			prod := tp.Producer(nil)
			if err := prod.Produce(ctx, isbtest.Item{Seq: 0}); err != nil {
				t.Fatal(err)
			}
			c, err := tp.JoinGroup("g", 0, 1, isb.ManualCommit())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if b, err := c.Pull(ctx); err != nil || len(b.Items) != 1 {
				t.Fatalf("Pull = %v, %v; want 1 item", b.Items, err)
			}
			srv.Stop()
			time.Sleep(tc.down)
			if err := srv.Resume(); err != nil {
				t.Fatal(err)
			}
			if err := prod.Produce(ctx, isbtest.Item{Seq: 1}); err != nil {
				t.Fatal(err)
			}
			b, err := c.Pull(ctx)
			if tc.wantLost {
				if !errors.Is(err, isb.ErrClaimLost) {
					t.Fatalf("Pull after an outage of %v with ClaimTTL %v = %v, %v; want ErrClaimLost", tc.down, tc.ttl, b.Items, err)
				}
				return
			}
			if err != nil || b.Offset != 1 || len(b.Items) != 1 || b.Items[0].Seq != 1 {
				t.Fatalf("Pull after an outage of %v with ClaimTTL %v = offset %d %v, %v; want offset 1 [seq 1]", tc.down, tc.ttl, b.Offset, b.Items, err)
			}
			if err := c.CommitTo(0, 2); err != nil {
				t.Fatalf("CommitTo after the outage: %v", err)
			}
			other := mustTopic(t, srv.Connect(), prefix, nil, opts...)
			if c2, err := other.JoinGroup("g", 0, 1); !errors.Is(err, isb.ErrGroupInUse) {
				if c2 != nil {
					c2.Close()
				}
				t.Fatalf("another member joining after the outage: %v, want ErrGroupInUse (the claim holds)", err)
			}
		})
	}
}
