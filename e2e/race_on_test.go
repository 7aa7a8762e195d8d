//go:build race

package e2e

// raceEnabled builds the toolguard binary with the race detector when the
// tests themselves run under -race, so real traffic exercises it too.
const raceEnabled = true
