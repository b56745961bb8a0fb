package http

// Joins is how many requests joined a waiting one with their
// Idempotency-Key.
func Joins(s *Source) int64 { return s.joins.Load() }
