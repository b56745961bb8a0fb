package isb

// PushConsumer runs a handler over a consumer group with N goroutines.
type PushConsumer[T any] struct {
	// TODO(issue 2)
}

// Stop stops pulling, waits for the handlers in flight and releases the
// group. It is idempotent and safe to call from several goroutines.
func (p *PushConsumer[T]) Stop() error { panic("isb: not implemented") }
