//go:build !race

package manifests

// raceDetector: this binary was built without -race (see race.go).
const raceDetector = false
