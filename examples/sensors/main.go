// Command sensors runs until interrupted: a generator of temperature
// readings from 8 sensors, a map converting them to Celsius and tagging
// the hot ones, an alert branch logged with zap and an averaging sink. It
// prints the pipeline's counters every second; Ctrl-C stops reading,
// drains what is in flight and exits cleanly.
//
//	readings -> celsius ─┬─ (all) ──> averages (sink)
//	                     └─ hot ────> alerts (log sink)
package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

// reading is one measurement of a sensor, in Fahrenheit.
type reading struct {
	Sensor int
	F      float64
}

// averages is a sink keeping the mean temperature per sensor.
type averages struct {
	mu  sync.Mutex
	sum map[string]float64
	n   map[string]int
}

func (a *averages) write(_ context.Context, msgs []vertex.Message[float64]) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range msgs {
		a.sum[m.Keys[0]] += m.Value
		a.n[m.Keys[0]]++
	}
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	logger, err := zap.NewDevelopment()
	if err == nil {
		err = run(ctx, os.Stdout, logger)
		_ = logger.Sync()
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sensors:", err)
		os.Exit(1)
	}
}

// run runs the pipeline until ctx is cancelled and it has drained, writing
// the counters to w every second and a summary at the end.
func run(ctx context.Context, w io.Writer, logger *zap.Logger) error {
	p := pipeline.New("sensors", pipeline.WithLogger(logger))
	gen := vertex.Generator(func(i int64) reading {
		// A slow wave per sensor, with sensor 3 running hot now and then.
		f := 68 + 10*math.Sin(float64(i)/500+float64(i%8))
		if i%8 == 3 && (i/4000)%2 == 1 {
			f += 40
		}
		return reading{Sensor: int(i % 8), F: f}
	}).WithRate(2000).WithKeys(8)
	readings := pipeline.Source(p, "readings", gen, vertex.BatchSize(100))

	celsius := pipeline.FlatMap(p, "celsius", readings, func(_ context.Context, m vertex.Message[reading]) ([]vertex.Message[float64], error) {
		c := (m.Value.F - 32) * 5 / 9
		out := vertex.Derive(m, c)
		if c > 35 {
			out.Tags = []string{"hot"}
		}
		return []vertex.Message[float64]{out}, nil
	}, vertex.Replicas(2))

	avg := &averages{sum: map[string]float64{}, n: map[string]int{}}
	pipeline.Sink(p, "averages", celsius, vertex.Func(avg.write), vertex.PartitionByKey(), vertex.Replicas(2))
	pipeline.Sink(p, "alerts", celsius.Tagged("hot"), vertex.Log[float64](logger.Named("alert")), vertex.BatchSize(10))

	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			printStats(w, p)
			avg.mu.Lock()
			for k := range 8 {
				key := fmt.Sprintf("k%d", k)
				if avg.n[key] > 0 {
					fmt.Fprintf(w, "sensor %s: mean %.1f°C over %d readings\n", key, avg.sum[key]/float64(avg.n[key]), avg.n[key])
				}
			}
			avg.mu.Unlock()
			return err
		case <-tick.C:
			printStats(w, p)
		}
	}
}

func printStats(w io.Writer, p *pipeline.Pipeline) {
	for _, s := range p.Stats() {
		fmt.Fprintf(w, "%-9s read %7d written %7d acked %7d in flight %4d pending %5d\n",
			s.Name, s.Read, s.Written, s.Acked, s.InFlight, s.Pending)
	}
	fmt.Fprintln(w)
}
