package watermark

import (
	"slices"
	"strings"
)

// EndedProcessor is a processor whose stream on a partition is over, and
// the offset of its end of stream there.
type EndedProcessor struct {
	Processor string
	Offset    int64
}

// Ended returns the processors, of every edge, whose newest WMB on
// partition is final (watermark Max, as a processor whose stream is over
// publishes it, see Publisher.PublishEnd): their stream there is over, as
// the store says. A reader restarted after it consumed an upstream end of
// stream uses it to learn of that end again, since the processor that
// wrote it may never run again. The answer is as of the fetcher's last
// change: after Start it holds at least the store's contents at Start. A
// partition this reader does not read has none.
func (f *Fetcher) Ended(partition int) []EndedProcessor {
	f.mu.Lock()
	defer f.mu.Unlock()
	if partition < 0 || partition >= len(f.cfg.index) || f.cfg.index[partition] < 0 {
		return nil
	}
	i := f.cfg.index[partition]
	var out []EndedProcessor
	for _, e := range f.edges {
		for _, p := range e.procs {
			if w, ok := p.timelines[i].newest(); ok && w.Watermark.Equal(Max) {
				out = append(out, EndedProcessor{Processor: p.name, Offset: w.Offset})
			}
		}
	}
	slices.SortFunc(out, func(a, b EndedProcessor) int { return strings.Compare(a.Processor, b.Processor) })
	return out
}
