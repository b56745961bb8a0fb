// Command wordcount counts the words of two texts with a runnel pipeline
// and prints the most frequent ones. It ends by itself in well under a
// second.
//
//	poem ─┐                      ┌─ stop ──────────────────> stopwords (sink)
//	      ├─> split (join) ──────┤
//	prose ┘                      └─ word ─> normalize ─────> counts (sink)
//
// The two sources are joined into one vertex; split tags each word "stop"
// or "word", and the two tagged branches go to different vertices.
package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
)

var poem = []string{
	"The river flows and the river knows",
	"where the water goes when the cold wind blows",
	"a stream of words, a stream of days,",
	"the river runs in a thousand ways",
}

var prose = []string{
	"A stream processor moves data from sources through functions to sinks.",
	"Every message in the stream is tracked until the sinks have it,",
	"so the river of data never loses a drop when the pipeline stops.",
}

var stopwords = map[string]bool{
	"a": true, "and": true, "the": true, "of": true, "in": true, "to": true,
	"is": true, "it": true, "so": true, "from": true, "when": true, "where": true,
}

// tally is a sink counting values; replicas call it concurrently.
type tally struct {
	mu     sync.Mutex
	counts map[string]int
}

func (t *tally) write(_ context.Context, msgs []vertex.Message[string]) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range msgs {
		t.counts[m.Value]++
	}
	return nil
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "wordcount:", err)
		os.Exit(1)
	}
}

// run builds and runs the pipeline, then writes the report to w.
func run(ctx context.Context, w io.Writer) error {
	p := pipeline.New("wordcount")
	poemLines := pipeline.Source(p, "poem", vertex.FromSlice(poem))
	proseLines := pipeline.Source(p, "prose", vertex.FromSlice(prose))

	words := pipeline.FlatMap(p, "split", pipeline.Join(poemLines, proseLines), split, vertex.Replicas(2))

	normalized := pipeline.Map(p, "normalize", words.Tagged("word"), func(_ context.Context, w string) (string, error) {
		return strings.TrimSuffix(w, "s"), nil // a crude stemmer: rivers -> river
	})
	counts := &tally{counts: map[string]int{}}
	pipeline.Sink(p, "counts", normalized, vertex.Func(counts.write), vertex.PartitionByKey())
	stops := &tally{counts: map[string]int{}}
	pipeline.Sink(p, "stopwords", words.Tagged("stop"), vertex.Func(stops.write))

	if err := p.Run(ctx); err != nil {
		return err
	}

	type wc struct {
		word  string
		count int
	}
	var top []wc
	for w, c := range counts.counts {
		top = append(top, wc{w, c})
	}
	slices.SortFunc(top, func(a, b wc) int {
		return cmp.Or(cmp.Compare(b.count, a.count), cmp.Compare(a.word, b.word))
	})
	fmt.Fprintln(w, "most frequent words:")
	for _, e := range top[:min(8, len(top))] {
		fmt.Fprintf(w, "  %-10s %d\n", e.word, e.count)
	}
	total := 0
	for _, c := range stops.counts {
		total += c
	}
	fmt.Fprintf(w, "distinct words: %d, stopwords skipped: %d\n", len(counts.counts), total)
	for _, s := range p.Stats() {
		fmt.Fprintf(w, "  vertex %-10s read %3d  written %3d  acked %3d\n", s.Name, s.Read, s.Written, s.Acked)
	}
	return nil
}

// split emits one message per word of a line, keyed by the word and tagged
// "stop" or "word".
func split(_ context.Context, line vertex.Message[string]) ([]vertex.Message[string], error) {
	fields := strings.FieldsFunc(strings.ToLower(line.Value), func(r rune) bool {
		return !unicode.IsLetter(r) && r != '\''
	})
	out := make([]vertex.Message[string], 0, len(fields))
	for i, w := range fields {
		m := vertex.Derive(line, w)
		m.ID = fmt.Sprintf("%s/%d", line.ID, i)
		m.Keys = []string{w}
		m.Tags = []string{"word"}
		if stopwords[w] {
			m.Tags = []string{"stop"}
		}
		out = append(out, m)
	}
	return out, nil
}
