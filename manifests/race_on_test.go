//go:build race

package manifests

// raceEnabled: the race detector is on. Its shadow memory cannot be mapped under the render
// process's RLIMIT_DATA, so a render that runs out of its memory budget dies with the race
// detector's own error instead of the budget's; tests of the memory budget skip.
const raceEnabled = true
