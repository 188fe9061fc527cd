//go:build race

package a2asrv_test

// raceEnabled: the race detector changes what allocates (sync.Pool drops
// what it is given at random), so allocation counts are not checked.
const raceEnabled = true
