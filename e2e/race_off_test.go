//go:build !race

package e2e

// raceEnabled tells whether the tests run under the race detector, which
// slows this package's pipelines 5-10x. The longest tests (the crash tests'
// rounds, the random DAGs' seeds) then run a part of their cases: .ci/run
// runs the package twice, plain and with -race, and the plain run does every
// case, so -race looks for data races on the same code paths within the
// CI's time budget instead of repeating every kill.
const raceEnabled = false
