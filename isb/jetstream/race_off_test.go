//go:build !race

package jetstream_test

// raceEnabled tells whether the tests run under the race detector, which
// makes the suites on a three-server cluster the package's longest tests
// (TestClusterPackedSuite 75 s, TestClusterSuite 34 s of 176 s, and twice
// that beside e2e in .ci/run). Under it the cluster runs the packed
// suites only, the format pipeline/jsstorage uses by default; the plain
// run, which .ci/run does first, runs both formats on the cluster.
const raceEnabled = false
