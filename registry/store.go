package registry

import "context"

// Store keeps agent records for the registry service: the contract a
// durable store implements (store/sqlite and store/postgres do, and so may
// a store written outside this module), and that
// novaos.dev/novaos/store/storetest.TestRegistryStore checks.
//
// Names and ids are each unique. Methods return errors wrapping ErrNotFound
// and ErrExists as described; records passed in and returned are never
// shared with the store (a store keeps and returns copies, Agent.Clone).
// The service assigns ids and timestamps before Create and Update and has
// validated every record; a store keeps what it is given.
type Store interface {
	// Create adds a record; ErrExists if its id or name is taken.
	Create(ctx context.Context, a *Agent) error
	// Update replaces the record with a.ID; ErrNotFound if there is none,
	// ErrExists if a.Name is another record's name.
	Update(ctx context.Context, a *Agent) error
	// Delete removes the record with this id; ErrNotFound if there is none.
	Delete(ctx context.Context, id string) error
	// Get returns the record with this id; ErrNotFound if there is none.
	Get(ctx context.Context, id string) (*Agent, error)
	// GetByName returns the record with this name; ErrNotFound if there is
	// none.
	GetByName(ctx context.Context, name string) (*Agent, error)
	// List returns up to limit records whose names sort after after (byte
	// order), in name order.
	List(ctx context.Context, after string, limit int) ([]*Agent, error)
	// Version is a number that changes (grows) with every committed
	// Create, Update and Delete, across every process sharing the store.
	Version(ctx context.Context) (int64, error)
}
