package jetstream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/natstest"

	"github.com/nats-io/nats.go"
)

// A round that ends before all its messages were sent gives back exactly
// the slots its sent messages hold: the old code gave one back per
// unanswered message, sent or not, and the semaphore panicked ("released
// more than held"), or, had it not, would have let more than
// MaxOutstanding publishes out.
func TestPublisherRoundEndedEarlyKeepsSlots(t *testing.T) {
	nc := natstest.Start(t).Connect()
	// A subscriber that never answers: no acknowledgement, no 503.
	sink, err := nc.SubscribeSync("silent")
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	p, err := newPublisher(nc, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	msgs := []*nats.Msg{{Subject: "silent"}, {Subject: "silent"}, {Subject: "silent"}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	// The first message takes the one slot; the second waits for it
	// until ctx ends.
	res, err := p.publish(ctx, msgs, time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("publish = %v; want the context's deadline", err)
	}
	for i, r := range res {
		if r.err == nil {
			t.Fatalf("message %d of a round without answers reported stored at %d", i, r.seq)
		}
	}
	if !p.slots.TryAcquire(1) {
		t.Fatal("the slot of the one sent message was not given back")
	}
	if p.slots.TryAcquire(1) {
		t.Fatal("more slots than MaxOutstanding after the round")
	}
}
