package kafka

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-dev/runnel/vertex"
)

// Sink is a [vertex.Sink] producing every message to one topic with
// franz-go's idempotent producer; [NewSink] makes one. A message becomes
// a record with its value, its keys as the record key (none: no key, so
// the partitioner spreads them; one: that key; several: their unambiguous
// encoding), its headers, and its event time as the timestamp, so a
// [Source] reading the topic gives back the message's key, headers and
// event time.
//
// Write returns once every record of the batch is acknowledged by the
// brokers (all in-sync replicas: the idempotent producer's acks) or has
// failed: a failed record is answered vertex.ResultRetry with its cause,
// and the vertex's retry policy writes it again; by default
// ([Sink.DefaultRetry]) until the pipeline stops, so a broker down for a
// while holds the pipeline back instead of failing it. The idempotent producer never
// writes a record twice when it retries a request itself; a message
// written again after a ResultRetry, or after a crash between the write
// and the pipeline's commit, is a new record (at least once). Replicas
// and concurrent writes share one client. Its vertex reads batches of
// 2,000 messages unless its options say otherwise ([Sink.DefaultOptions]).
type Sink struct {
	cfg sinkConfig
	cl  *kgo.Client

	mu     sync.RWMutex // held for reading by writes, for writing by Close
	closed bool

	// recs pools the writes' records (*[]kgo.Record), which a write
	// would otherwise allocate and zero, a batch's worth. franz-go lets a
	// record go when it calls its promise (it may even be changed there),
	// and a write returns after every promise, so the next write may
	// reuse them.
	recs sync.Pool

	failed atomic.Int64
}

// NewSink validates cfg and makes the client; franz-go connects at the
// first write. An invalid field of cfg is an *OptionError naming it
// (errors.Is(err, pipeline.ErrInvalidOption)). Close releases the client;
// the pipeline calls it when it stops.
func NewSink(cfg SinkConfig) (*Sink, error) {
	c, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	// No linger by default: a write waits for its records, so a linger
	// would add to every write (franz-go lingers 10ms; with the vertex's 4
	// writes of 500 in flight that capped the sink at 55K msg/s on kfake).
	// Records still batch: the idempotent producer has one request in
	// flight per broker, and what comes meanwhile goes in the next one.
	opts := append(append([]kgo.Opt{kgo.ProducerLinger(0)}, c.ClientOptions...),
		kgo.SeedBrokers(c.Brokers...),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: sink to %q: %w", c.Topic, err)
	}
	if off, _ := cl.OptValue(kgo.DisableIdempotentWrite).(bool); off {
		cl.Close()
		return nil, optionError("ClientOptions", "kgo.DisableIdempotentWrite()", "must leave the idempotent producer on")
	}
	return &Sink{cfg: c, cl: cl}, nil
}

// Write produces msgs and waits for each record's outcome: nil results
// when all are acknowledged, else vertex.ResultRetry for each failed one
// (ResultOK for the rest) and a *vertex.WriteError giving each failed
// one's cause (ErrProduce, wrapping franz-go's error), which the pipeline
// logs and, when the retries give up, returns from Run. Write after Close
// is ErrClosed.
func (s *Sink) Write(ctx context.Context, msgs []vertex.Message[[]byte]) ([]vertex.Result, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	// The deadline fails the records still waiting when it passes (as soon
	// as the idempotent producer knows it is safe to: a request sent and
	// not answered may have been stored). franz-go's own
	// RecordDeliveryTimeout would not do: it counts from the record's
	// timestamp, which is the message's event time.
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DeliveryTimeout)
	defer cancel()
	rp, _ := s.recs.Get().(*[]kgo.Record)
	if rp == nil {
		rp = new([]kgo.Record)
	}
	defer s.recs.Put(rp)
	if cap(*rp) < len(msgs) {
		*rp = make([]kgo.Record, len(msgs))
	}
	recs := (*rp)[:len(msgs)]
	// The values and keys they hold belong to the messages: not kept in
	// the pool.
	defer clear(recs)
	var (
		wg   sync.WaitGroup
		emu  sync.Mutex
		errs map[*kgo.Record]error
	)
	wg.Add(len(msgs))
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			emu.Lock()
			if errs == nil {
				errs = map[*kgo.Record]error{}
			}
			errs[r] = err
			emu.Unlock()
		}
		wg.Done()
	}
	for i := range msgs {
		toRecord(s.cfg.Topic, &msgs[i], &recs[i])
		s.cl.Produce(ctx, &recs[i], promise)
	}
	wg.Wait()
	if len(errs) == 0 {
		return nil, nil
	}
	s.failed.Add(int64(len(errs)))
	res := make([]vertex.Result, len(msgs))
	causes := make([]error, len(msgs))
	for i := range recs {
		if err, ok := errs[&recs[i]]; ok {
			res[i] = vertex.ResultRetry
			causes[i] = fmt.Errorf("%w: topic %q: %w", ErrProduce, s.cfg.Topic, err)
		}
	}
	return res, &vertex.WriteError{Causes: causes}
}

// DefaultRetry is vertex.RemoteRetry: a sink vertex on it retries failed
// records until the pipeline stops, unless its options set a policy
// (vertex.Retry), which wins (see [vertex.RetryDefaulter]).
func (s *Sink) DefaultRetry() vertex.RetryPolicy { return vertex.RemoteRetry }

// sinkBatchSize is the sink vertex's default BatchSize (see
// [Sink.DefaultOptions]).
const sinkBatchSize = 2000

// DefaultOptions makes the sink's vertex read batches of 2,000 messages
// (vertex.BatchSize; the vertex's own options win), so 2,000 records are
// in flight to the brokers instead of the default 500: a write waits for
// its records' acknowledgements, and the vertex's Concurrency writes of
// BatchSize/Concurrency records each are all that is in flight (the
// figures are in docs/benchmarks.md, "Kafka source and sink").
func (s *Sink) DefaultOptions() []vertex.Option {
	return []vertex.Option{vertex.BatchSize(sinkBatchSize)}
}

// Failed returns how many records failed to be produced (and were
// answered vertex.ResultRetry) since the sink was made.
func (s *Sink) Failed() int64 { return s.failed.Load() }

// Close waits for the writes in flight, then closes the client. It is
// idempotent.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.cl.Close()
	return nil
}
