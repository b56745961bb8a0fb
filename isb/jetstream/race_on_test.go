//go:build race

package jetstream_test

// raceEnabled: see race_off_test.go.
const raceEnabled = true
