// Package pgtest gives a test its own empty PostgreSQL database.
//
// It reads NOVAOS_TEST_POSTGRES_URL, the address of a server the test may
// create databases on (./scripts/test starts a throwaway one and sets it).
// Each call to URL creates a database named novaos_test_<random> there and
// drops it when the test ends, so tests and concurrent runs never share
// state. When the variable is unset, the test is skipped with a hint, or
// fails if NOVAOS_REQUIRE_POSTGRES=1, so CI cannot pass by skipping.
//
//	func TestSomethingOnPostgres(t *testing.T) {
//		db, err := postgres.Open(ctx, pgtest.URL(t), nil)
//		...
//	}
package pgtest
