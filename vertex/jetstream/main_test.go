package jetstream

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/runnel-dev/runnel/internal/crashtest"
)

// TestMain runs a child's part when the crash test re-executed this
// binary (crash_test.go); otherwise it runs the tests and checks that no
// goroutine outlives them: not the source's, not the NATS client's, not
// the embedded server's.
func TestMain(m *testing.M) {
	if crashtest.RunChild(map[string]func(){"jetstream-crash": crashChild}) {
		return
	}
	goleak.VerifyTestMain(m)
}

// newJS is a JetStream context on nc.
func newJS(t testing.TB, nc *nats.Conn) natsjs.JetStream {
	t.Helper()
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// createStream creates the file stream name on the subject name.>
// (and name itself) with a duplicate window of two minutes.
func createStream(t testing.TB, js natsjs.JetStream, name string) {
	t.Helper()
	if _, err := js.CreateStream(context.Background(), natsjs.StreamConfig{
		Name: name, Subjects: []string{name, name + ".>"}, Storage: natsjs.FileStorage, Duplicates: 2 * time.Minute,
	}); err != nil {
		t.Fatal(err)
	}
}

// publishIDs publishes "id-i" for i in [from, to) to subject, with the
// key "k{i mod keys}" and the header n=i, and waits for every
// acknowledgement.
func publishIDs(t testing.TB, js natsjs.JetStream, subject string, from, to, keys int) {
	t.Helper()
	for i := from; i < to; i++ {
		m := &nats.Msg{Subject: subject, Data: []byte("id-" + strconv.Itoa(i)), Header: nats.Header{}}
		m.Header.Set("n", strconv.Itoa(i))
		m.Header.Set(KeyHeader, "k"+strconv.Itoa(i%keys))
		// Waits for room when 4000 publishes are pending (the client's
		// default), as under -race on a loaded machine.
		if _, err := js.PublishMsgAsync(m, natsjs.WithStallWait(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		t.Fatal("publishes not acknowledged within a minute")
	}
}

// readStream reads every message stream holds now, in order.
func readStream(t testing.TB, js natsjs.JetStream, stream string) []natsjs.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	total := int(st.CachedInfo().State.Msgs)
	cons, err := st.OrderedConsumer(ctx, natsjs.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var out []natsjs.Msg
	for len(out) < total {
		batch, err := cons.Fetch(min(total-len(out), 1000), natsjs.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			out = append(out, m)
		}
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of the %d messages of %q", len(out), total, stream)
		}
	}
	return out
}

// waitFor polls cond every 10ms until it holds or timeout passes, and
// fails the test then, saying what.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// queued is how many messages src has fetched and not yet handed out.
func (s *Source) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.q.C) + len(s.over)
}
