//go:build race

package manifests

// raceDetector: this binary was built with -race (tests only; convoy is never shipped so).
// The race detector maps its shadow memory lazily, which RLIMIT_DATA refuses, so a render
// process built so gets no data limit: its memory budget is not enforced.
const raceDetector = true
