//go:build !race

package a2asrv_test

const raceEnabled = false
