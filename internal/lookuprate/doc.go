// Package lookuprate enforces the lookup.rate of rule files: one token
// bucket per API and rate, refilled continuously. A lookup spends a token
// or is told how long until the next one; nothing waits or sleeps here.
package lookuprate
