package monitor

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/pipeline"
)

// Option configures the collector and the handler. Options are validated
// once; an invalid one is an *isb.OptionError naming it.
type Option func(*config)

type config struct {
	namespace string
	gatherer  prometheus.Gatherer
	refresh   time.Duration
}

// DefaultNamespace prefixes every metric name unless Namespace says
// otherwise.
const DefaultNamespace = "runnel"

// Namespace sets the prefix of every metric name (default "runnel":
// runnel_forwarder_data_read_total). "" gives the names without a prefix,
// Numaflow's for the forwarder_* families.
func Namespace(ns string) Option { return func(c *config) { c.namespace = ns } }

// Gatherer makes the handler's /metrics serve g, the user's registry with
// the collector registered on it (Register) beside their own metrics. By
// default the handler serves a registry of its own that holds the
// pipeline's collector only.
func Gatherer(g prometheus.Gatherer) Option { return func(c *config) { c.gatherer = g } }

// Refresh sets how often the page fetches /status again (default 1s, at
// least 100ms).
func Refresh(d time.Duration) Option { return func(c *config) { c.refresh = d } }

func newConfig(opts []Option) (config, error) {
	c := config{namespace: DefaultNamespace, refresh: time.Second}
	if err := isb.ApplyOptions(&c, "monitor.Option", opts); err != nil {
		return c, err
	}
	if c.namespace != "" && !validName(c.namespace) {
		return c, &isb.OptionError{Package: "monitor", Option: "Namespace", Value: c.namespace, Reason: "use letters, digits and '_', not starting with a digit"}
	}
	if c.refresh < 100*time.Millisecond {
		return c, &isb.OptionError{Package: "monitor", Option: "Refresh", Value: c.refresh, Reason: "must be at least 100ms"}
	}
	return c, nil
}

// validName reports whether s may begin a Prometheus metric name.
func validName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// ErrNilPipeline: a nil *pipeline.Pipeline was given.
var ErrNilPipeline = errors.New("monitor: nil pipeline")

// NewCollector returns a prometheus.Collector of p's metrics (see the
// package doc for the list). It reads p.Status at every scrape; it may be
// registered before p runs and outlive the run.
func NewCollector(p *pipeline.Pipeline, opts ...Option) (prometheus.Collector, error) {
	if p == nil {
		return nil, ErrNilPipeline
	}
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &collector{p: p, d: newDescs(c.namespace, p.Name())}, nil
}

// Register registers p's collector on reg: the one call that puts a
// pipeline's metrics on the user's registry. Pipelines with different
// names share a registry (every metric carries a "pipeline" label); a
// second registration of the same pipeline name fails as
// prometheus.Registerer.Register does.
func Register(reg prometheus.Registerer, p *pipeline.Pipeline, opts ...Option) error {
	c, err := NewCollector(p, opts...)
	if err != nil {
		return err
	}
	return reg.Register(c)
}

//go:embed assets
var assets embed.FS

// Handler returns an http.Handler serving p:
//
//	/          the page: the DAG with live rates, backlog and watermarks
//	/status    the Status as JSON (the schema is in the package doc)
//	/metrics   the Prometheus metrics (see Gatherer)
//	/assets/   the page's script and style, embedded in the binary
//
// Mount it at the root or under a prefix with its trailing slash (the
// page links relatively):
//
//	mux.Handle("/pipeline/", http.StripPrefix("/pipeline", h))
func Handler(p *pipeline.Pipeline, opts ...Option) (http.Handler, error) {
	if p == nil {
		return nil, ErrNilPipeline
	}
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	g := c.gatherer
	if g == nil {
		reg := prometheus.NewRegistry()
		if err := reg.Register(&collector{p: p, d: newDescs(c.namespace, p.Name())}); err != nil {
			return nil, err
		}
		g = reg
	}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	page, err := fs.ReadFile(static, "index.html")
	if err != nil {
		return nil, err
	}
	page = []byte(strings.Replace(string(page), "{{refresh}}", fmt.Sprint(c.refresh.Milliseconds()), 1))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(p.Status())
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	return mux, nil
}

// ListenAndServe serves Handler(p, opts...) on addr (":8080") until ctx
// ends, then shuts the server down, waiting up to 5 seconds for requests
// in flight. It returns nil after ctx ended, or the error that stopped
// the server.
func ListenAndServe(ctx context.Context, addr string, p *pipeline.Pipeline, opts ...Option) error {
	h, err := Handler(p, opts...)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	return serve(ctx, ln, h)
}

// serve serves h on ln until ctx ends.
func serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("monitor: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
