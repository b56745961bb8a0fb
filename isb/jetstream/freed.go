package jetstream

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/runnel-dev/runnel/internal/kvleader"
)

// A KV Create is not safe on a replicated bucket: once its compare-and-set
// on revision 0 fails (the key's last message is a delete marker), nats.go
// reads the key with a direct get to tell a deleted key from a live one,
// and any replica may answer. A follower that has not applied the delete
// yet reports the old value (Create fails with ErrKeyExists), one further
// behind an older delete marker (Create's retry on that revision fails
// with wrong last sequence, which matches ErrKeyExists too). On R3 under
// load, a consumer closed and opened again in one process found its own
// released claim "read by an open consumer of another process" (3 of 4
// runs of TestClusterSuite; TestClusterClaimAfterRelease). freedRevision
// asks the stream's leader instead.

// freedRevision reads key of bucket from its stream's leader (a message
// get, not a direct get) and reports whether it is free: deleted or
// purged, at revision rev, or absent (rev 0, an expired claim). A key
// holding a value is not free.
func freedRevision(ctx context.Context, nc *nats.Conn, bucket, key string) (rev uint64, free bool, err error) {
	_, rev, live, err := leaderEntry(ctx, nc, bucket, key)
	return rev, err == nil && !live, err
}

// leaderEntry reads key of bucket from its stream's leader: its value and
// revision, live false when it was deleted or purged (at revision rev) or
// never written (rev 0). A group's commit is read this way too (log.get):
// a direct get from a follower that had not applied DeleteGroup's purge
// gave a group created again under the same name the old group's commits,
// so it started where the deleted one had stopped (TestClusterPackedSuite
// DeleteGroupRecomputesMin waited 2 minutes for items it had skipped, in
// .ci/run and once in an earlier CI run of TestClusterSuite).
func leaderEntry(ctx context.Context, nc *nats.Conn, bucket, key string) (value []byte, rev uint64, live bool, err error) {
	js, err := nc.JetStream()
	if err != nil {
		return nil, 0, false, err
	}
	return kvleader.Last(ctx, js, bucket, key)
}
