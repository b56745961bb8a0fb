package jetstream

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
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
	js, err := nc.JetStream()
	if err != nil {
		return 0, false, err
	}
	m, err := js.GetLastMsg("KV_"+bucket, "$KV."+bucket+"."+key, nats.Context(ctx))
	if errors.Is(err, nats.ErrMsgNotFound) {
		return 0, true, nil
	}
	if err != nil {
		return 0, false, err
	}
	switch m.Header.Get("KV-Operation") {
	case "DEL", "PURGE":
		return m.Sequence, true, nil
	}
	return 0, false, nil
}
