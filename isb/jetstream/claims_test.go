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
