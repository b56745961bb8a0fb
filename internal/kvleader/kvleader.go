// Package kvleader reads a JetStream KV key from its stream's leader.
//
// nats.go's KeyValue.Get is a direct get, which any replica of a
// replicated bucket may answer, also one that has not applied the latest
// put, delete or purge yet. A message get of the key's last message goes
// to the stream's leader. isb/jetstream reads its group commits and freed
// claims this way, pipeline/jsstorage its state bucket.
package kvleader

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
)

// Last returns key's last message in bucket, read from the leader: its
// value and revision, with live false when the key was deleted or purged
// (at revision rev) or never written (rev 0).
func Last(ctx context.Context, js nats.JetStreamContext, bucket, key string) (value []byte, rev uint64, live bool, err error) {
	m, err := js.GetLastMsg("KV_"+bucket, "$KV."+bucket+"."+key, nats.Context(ctx))
	if errors.Is(err, nats.ErrMsgNotFound) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	switch m.Header.Get("KV-Operation") {
	case "DEL", "PURGE":
		return nil, m.Sequence, false, nil
	}
	return m.Data, m.Sequence, true, nil
}
