package jskv_test

import (
	"errors"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/watermark/jskv"
	"github.com/runnel-dev/runnel/watermark/storetest"
)

// restricted starts a server whose one user, u, may publish and subscribe
// to everything except the subjects denied.
func restricted(t *testing.T, denyPub, denySub []string) *testServer {
	return startServer(t, natstest.ServerOptions(func(o *server.Options) {
		o.Users = []*server.User{{Username: "u", Password: "p", Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{">"}, Deny: denyPub},
			Subscribe: &server.SubjectPermission{Allow: []string{">"}, Deny: denySub},
		}}}
	}))
}

// TestWatchFailsWithoutPermission: the account may put into the bucket but
// not create the consumer a watch needs. The server refuses the request
// without an answer, so the watch's open waits its bound, then fails with
// the permission violation (which no retry heals), naming the bucket.
func TestWatchFailsWithoutPermission(t *testing.T) {
	t.Parallel() // waits for the open's 5s bound
	srv := restricted(t, []string{"$JS.API.CONSUMER.CREATE.KV_b", "$JS.API.CONSUMER.CREATE.KV_b.>"}, nil)
	_, js := srv.connect(append(reconnectForever, nats.UserInfo("u", "p"))...)
	s := newStore(t, js)
	putEventually(t, s, "b", "k", "1")
	err := storetest.StartWatch(t, s, "b").ExpectFailure()
	var we *jskv.WatchError
	if !errors.As(err, &we) || we.Bucket != "b" || !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("watch failed with %v; want a *jskv.WatchError for bucket b matching nats.ErrPermissionViolation", err)
	}
	t.Logf("watch: %v", err)
}

// TestBucketDeletionFoundWithoutAdvisory: the deletion advisory never
// arrives (the account may not subscribe to it; the server may also drop
// it), and a Put creates the bucket again at once: the watch's periodic
// check finds the bucket replaced and fails, rather than following the new
// bucket from the old one's revision.
func TestBucketDeletionFoundWithoutAdvisory(t *testing.T) {
	srv := restricted(t, nil, []string{"$JS.EVENT.ADVISORY.>"})
	opts := append(reconnectForever, nats.UserInfo("u", "p"))
	_, js := srv.connect(opts...)
	s := newStore(t, js)
	putEventually(t, s, "b", "k", "1")
	w := storetest.StartWatch(t, s, "b")
	w.Expect("put k=1", "synced =")
	if err := js.DeleteKeyValue(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	putEventually(t, s, "b", "k", "2")
	err := w.ExpectFailure()
	var we *jskv.WatchError
	if !errors.As(err, &we) || we.Bucket != "b" || !errors.Is(err, jskv.ErrBucketDeleted) {
		t.Fatalf("watch failed with %v; want a *jskv.WatchError for bucket b matching ErrBucketDeleted", err)
	}
}
