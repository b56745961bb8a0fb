package jetstream_test

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/isb/jetstream"
)

// The suites on a cluster of three servers with every stream and bucket
// replicated on all three (R3). Direct gets are answered by any replica,
// and a follower may not have applied yet a message its leader
// acknowledged: reads retry what they find missing below the known tail
// (errNotYet), and the suites' exact contents check that nothing is
// skipped or read out of order meanwhile. The test counts the retries the
// backends logged, those of errNotYet apart, as a figure: how many there
// are depends on timing, so it asserts none.
func TestClusterSuite(t *testing.T) {
	if raceEnabled {
		t.Skip("under -race the cluster runs the packed suites (TestClusterPackedSuite); the plain run does this one (race_off_test.go)")
	}
	c := natstest.StartCluster(t, 3)
	core, logs := observer.New(zapcore.WarnLevel)
	isbtest.RunStorage(t, storageOn(c.Connect(), jetstream.Replicas(3), jetstream.Logger(zap.New(core))))
	notYet, other := 0, map[string]int{}
	for _, e := range logs.FilterMessage("jetstream: retrying").All() {
		msg := ""
		for _, f := range e.Context {
			if f.Key == "error" {
				msg = f.Interface.(error).Error()
			}
		}
		if strings.Contains(msg, "not yet readable") {
			notYet++
		} else {
			other[msg]++
		}
	}
	t.Logf("R3 on 3 servers: %d reads retried for a replica behind its leader (errNotYet), other retries %v", notYet, other)
}

// The shared-storage suite on the same kind of cluster: every "process"
// is a topic on a connection of its own to any of the three servers, so
// claims, commits and wake-ups cross servers as well as processes.
func TestClusterSharedSuite(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	isbtest.RunShared(t, sharedOn(func() *nats.Conn { return c.Connect() }, jetstream.Replicas(3)))
}

// The suites on packed streams of the same cluster.
func TestClusterPackedSuite(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	isbtest.RunStorage(t, packedOn(c.Connect(), jetstream.Replicas(3)))
	isbtest.RunShared(t, packedSharedOn(func() *nats.Conn { return c.Connect() }, jetstream.Replicas(3)))
}
