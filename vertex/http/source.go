package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/vertex"
)

// IdempotencyKeyHeader names the request header whose value, when given,
// makes the records' IDs "{key}/{index}": a client that sends a request
// again with the same key gets the same IDs (a deduplicating sink drops the
// second), and a request arriving while one with its key is still waiting
// for its acknowledgement waits for that one instead of adding its records
// again.
const IdempotencyKeyHeader = "Idempotency-Key"

// Source is the HTTP source [NewSource] returns: an http.Handler taking
// POSTed records, and the vertex.Source and vertex.Acker that hands them
// to the pipeline; an io.Closer. See the package doc.
type Source struct {
	cfg    sourceConfig
	prefix string // the IDs of records without an idempotency key start with it

	mu       sync.Mutex
	queue    []vertex.Message[[]byte] // accepted and not yet read; queue[head:]
	head     int
	held     int                 // accepted and not yet acknowledged: read or queued
	pending  map[string]*request // by message ID, until acknowledged
	byKey    map[string]*request // the requests with an idempotency key, until answered
	seq      int64
	closed   bool
	closing  chan struct{} // closed by Close: waiting requests are answered 503
	wake     chan struct{} // a Read waits on it for records
	serveErr error         // Listen's failure, returned by every Read
	srv      *http.Server
	ln       net.Listener
	served   chan struct{} // closed when the own server returned
	listen   sync.Once
	joins    atomic.Int64 // requests that joined one with their key (for tests)
}

// request is an accepted request waiting for its records' acknowledgement.
type request struct {
	left int           // records not yet acknowledged
	done chan struct{} // closed once left is 0
	n    int
	key  string
}

// NewSource returns an HTTP source. Mount it (it is an http.Handler) in a
// server, or give Listen to have it serve an address itself:
//
//	src := http.NewSource(http.Capacity(50_000))
//	mux.Handle("POST /ingest", src)
//
// Bad options are reported by Validate, which the pipeline calls before it
// starts.
func NewSource(opts ...SourceOption) *Source {
	s := &Source{
		cfg: sourceConfig{capacity: DefaultCapacity, retryAfter: DefaultRetryAfter, maxBody: DefaultMaxBodyBytes,
			ackTimeout: DefaultAckTimeout},
		prefix:  strconv.FormatInt(time.Now().UnixNano(), 36),
		pending: map[string]*request{},
		byKey:   map[string]*request{},
		closing: make(chan struct{}),
		wake:    make(chan struct{}, 1),
	}
	for _, o := range opts {
		o(&s.cfg)
	}
	return s
}

var (
	_ vertex.Source[[]byte] = (*Source)(nil)
	_ vertex.Acker[[]byte]  = (*Source)(nil)
	_ http.Handler          = (*Source)(nil)
	_ io.Closer             = (*Source)(nil)
)

// Validate reports a bad option as an *vertex.OptionError.
func (s *Source) Validate() error { return s.cfg.validate() }

// Addr is the address the source listens on (Listen), once the pipeline's
// first Read opened it; nil before, and without Listen.
func (s *Source) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Buffered is the number of records the source holds: accepted, and not
// yet acknowledged by the pipeline. It never exceeds Capacity.
func (s *Source) Buffered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// ServeHTTP takes a POST of records (see the package doc for the formats
// and the answers).
func (s *Source) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "http: POST records to this URL", http.StatusMethodNotAllowed)
		return
	}
	f, err := formatOf(r.Header.Get("Content-Type"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.maxBody))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			http.Error(w, fmt.Sprintf("http: body longer than MaxBodyBytes (%d)", s.cfg.maxBody), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "http: read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	records, err := parseBody(f, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(records) > s.cfg.capacity {
		http.Error(w, fmt.Sprintf("http: %d records in one request, more than the source's Capacity (%d): send smaller batches", len(records), s.cfg.capacity),
			http.StatusRequestEntityTooLarge)
		return
	}
	if len(records) == 0 {
		accepted(w, 0)
		return
	}
	req, status := s.admit(r.Header.Get(IdempotencyKeyHeader), records)
	if status != 0 {
		s.unavailable(w, status)
		return
	}
	t := time.NewTimer(s.cfg.ackTimeout)
	defer t.Stop()
	select {
	case <-req.done:
		accepted(w, req.n)
	case <-s.closing:
		s.unavailable(w, http.StatusServiceUnavailable)
	case <-t.C:
		w.Header().Set("Retry-After", s.retryAfter())
		http.Error(w, fmt.Sprintf("http: the pipeline did not acknowledge the records within AckTimeout (%v); they may still be delivered", s.cfg.ackTimeout),
			http.StatusServiceUnavailable)
	case <-r.Context().Done():
		// The client is gone; the records stay in the pipeline.
	}
}

// accepted answers 200 with the number of records accepted.
func accepted(w http.ResponseWriter, n int) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(struct {
		Accepted int `json:"accepted"`
	}{n})
}

// unavailable answers 503 with Retry-After: the source is full or closed.
func (s *Source) unavailable(w http.ResponseWriter, status int) {
	w.Header().Set("Retry-After", s.retryAfter())
	msg := fmt.Sprintf("http: the pipeline is pushing back (Capacity %d records held): retry later", s.cfg.capacity)
	if status == statusClosed {
		msg, status = "http: the source is closed", http.StatusServiceUnavailable
	}
	http.Error(w, msg, status)
}

// statusClosed is admit's answer for a closed source (503 as well).
const statusClosed = -1

// retryAfter is the Retry-After value: whole seconds, rounded up.
func (s *Source) retryAfter() string {
	return strconv.FormatInt(int64((s.cfg.retryAfter+time.Second-1)/time.Second), 10)
}

// admit queues the records of a request, or returns why not: 503 when
// they do not fit, statusClosed. A request with the key of one still
// waiting joins it.
func (s *Source) admit(key string, records [][]byte) (*request, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, statusClosed
	}
	if req := s.byKey[key]; key != "" && req != nil {
		s.joins.Add(1)
		return req, 0
	}
	if s.held+len(records) > s.cfg.capacity {
		return nil, http.StatusServiceUnavailable
	}
	req := &request{left: len(records), n: len(records), done: make(chan struct{}), key: key}
	if key != "" {
		s.byKey[key] = req
	}
	for i, v := range records {
		var id string
		if key != "" {
			id = key + "/" + strconv.Itoa(i)
		} else {
			id = s.prefix + "-" + strconv.FormatInt(s.seq, 10)
			s.seq++
		}
		s.pending[id] = req
		// The records alias the request's body, which nothing else keeps.
		s.queue = append(s.queue, vertex.Message[[]byte]{ID: id, Value: v})
	}
	s.held += len(records)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return req, 0
}

// Read returns up to max records, waiting for a request; io.EOF once the
// source is closed. With Listen the first Read starts the server, and a
// failure to listen is its error (and every later Read's).
func (s *Source) Read(ctx context.Context, max int) ([]vertex.Message[[]byte], error) {
	if s.cfg.addr != "" {
		s.listen.Do(s.startServer)
		if s.serveErr != nil {
			return nil, s.serveErr
		}
	}
	for {
		s.mu.Lock()
		if n := min(len(s.queue)-s.head, max); n > 0 {
			out := make([]vertex.Message[[]byte], n)
			copy(out, s.queue[s.head:])
			clear(s.queue[s.head : s.head+n])
			if s.head += n; s.head == len(s.queue) {
				s.queue, s.head = s.queue[:0], 0
			} else {
				if s.head > len(s.queue)/2 {
					s.queue, s.head = s.queue[:copy(s.queue, s.queue[s.head:])], 0
				}
				// Records are left: another replica's Read may be waiting.
				select {
				case s.wake <- struct{}{}:
				default:
				}
			}
			s.mu.Unlock()
			return out, nil
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return nil, io.EOF
		}
		select {
		case <-s.wake:
		case <-s.closing:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Ack records that msgs are in the pipeline; a request whose records are
// all acknowledged is answered 200. An ID the source does not hold is
// vertex.ErrUnknownAck.
func (s *Source) Ack(_ context.Context, msgs []vertex.Message[[]byte]) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		req := s.pending[m.ID]
		if req == nil {
			return fmt.Errorf("%w: ID %q", vertex.ErrUnknownAck, m.ID)
		}
		delete(s.pending, m.ID)
		s.held--
		if req.left--; req.left == 0 {
			close(req.done)
			if req.key != "" {
				delete(s.byKey, req.key)
			}
		}
	}
	return nil
}

// startServer listens on the Listen address and serves the source there.
func (s *Source) startServer() {
	ln, err := net.Listen("tcp", s.cfg.addr)
	if err != nil {
		s.serveErr = fmt.Errorf("http: source: listen on %s (Listen): %w", s.cfg.addr, err)
		return
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.srv, s.ln, s.served = srv, ln, make(chan struct{})
	s.mu.Unlock()
	go func() {
		defer close(s.served)
		srv.Serve(ln) // ErrServerClosed once Close shuts it down
	}()
}

// Close answers 503 to the requests still waiting, refuses new ones, and
// stops the server Listen started; the pipeline calls it once it has
// stopped. It is idempotent.
func (s *Source) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	srv, served := s.srv, s.served
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(ctx) // the waiting handlers answer at once: closing is closed
	if err != nil {
		err = errors.Join(err, srv.Close())
	}
	<-served
	return err
}
