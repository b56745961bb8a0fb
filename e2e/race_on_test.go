//go:build race

package e2e

// raceEnabled: see race_off_test.go.
const raceEnabled = true
