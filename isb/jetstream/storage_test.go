package jetstream_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/isb/jetstream"
)

// prefixes makes every Storage of a test binary a fresh namespace on the
// server it shares with the others.
var prefixes atomic.Int64

// testOptions are what the tests run with: a fast refresh, so that what
// nothing announces is seen within milliseconds, and short timeouts.
func testOptions(prefix string) []jetstream.Option {
	return []jetstream.Option{
		jetstream.Prefix(prefix), jetstream.Refresh(20 * time.Millisecond),
		jetstream.RequestTimeout(5 * time.Second), jetstream.ClaimTTL(3 * time.Second),
	}
}

// storageOn returns a StorageFactory of fresh namespaces on nc; every
// Backend of one Storage opens the same streams, as a restarted process
// does.
func storageOn(nc *nats.Conn, opts ...jetstream.Option) isbtest.StorageFactory {
	return func(testing.TB) isbtest.Storage {
		prefix := fmt.Sprintf("t%d-", prefixes.Add(1))
		all := append(testOptions(prefix), opts...)
		return isbtest.Storage{
			New:     func() (isb.Backend[isbtest.Item], error) { return jetstream.New[isbtest.Item](nc, all...) },
			Durable: true,
		}
	}
}

// The Log-level contract, the topic behaviour suite and the restart
// checks, on one embedded server.
func TestSuite(t *testing.T) {
	srv := natstest.Start(t)
	isbtest.RunStorage(t, storageOn(srv.Connect()))
}

// The shared-storage suite: every "process" is a topic on a connection
// of its own to one server (procs_test.go runs real processes).
func TestSharedSuite(t *testing.T) {
	srv := natstest.Start(t)
	isbtest.RunShared(t, sharedOn(func() *nats.Conn { return srv.Connect() }))
}

// sharedOn returns a SharedFactory of fresh namespaces whose every
// "process" is a topic on a connection of its own (connect), with opts
// after the test options.
func sharedOn(connect func() *nats.Conn, opts ...jetstream.Option) isbtest.SharedFactory {
	return func(_ testing.TB, limit int64) isbtest.SharedStorage {
		prefix := fmt.Sprintf("s%d-", prefixes.Add(1))
		all := append(testOptions(prefix), opts...)
		if limit > 0 {
			// The usage limit is the suite's: uncommitted items. The
			// stream's own limit sits above it (it counts what retention
			// has not deleted yet).
			all = append(all, jetstream.MaxMsgs(4*limit), jetstream.UsageLimit(0.25))
		}
		return isbtest.SharedStorage{Open: func(t testing.TB, topicOpts ...isb.TopicOption) (*isb.Topic[isbtest.Item], error) {
			tp, err := jetstream.NewTopic[isbtest.Item](connect(), "orders", append(all, jetstream.Topic(topicOpts...))...)
			if err == nil {
				t.Cleanup(func() { tp.Close() })
			}
			return tp, err
		}}
	}
}

// The same suites on packed streams: every append is one message per
// frame, offsets jump from one frame to the next, and the suites check
// the same contents, order and exactly-once delivery.
func TestPackedSuite(t *testing.T) {
	srv := natstest.Start(t)
	isbtest.RunStorage(t, packedOn(srv.Connect()))
}

func TestPackedSharedSuite(t *testing.T) {
	srv := natstest.Start(t)
	isbtest.RunShared(t, packedSharedOn(func() *nats.Conn { return srv.Connect() }))
}

// packedOn is storageOn with packed streams, whose offsets are sparse.
func packedOn(nc *nats.Conn, opts ...jetstream.Option) isbtest.StorageFactory {
	f := storageOn(nc, append(opts, jetstream.Packed())...)
	return func(t testing.TB) isbtest.Storage {
		s := f(t)
		s.Sparse = true
		return s
	}
}

// packedSharedOn is sharedOn with packed streams.
func packedSharedOn(connect func() *nats.Conn, opts ...jetstream.Option) isbtest.SharedFactory {
	f := sharedOn(connect, append(opts, jetstream.Packed())...)
	return func(t testing.TB, limit int64) isbtest.SharedStorage {
		s := f(t, limit)
		s.Sparse = true
		return s
	}
}
