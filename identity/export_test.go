package identity

// RememberedTokens is how many verified tokens v remembers.
func RememberedTokens(v *Verifier) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.verified)
}
