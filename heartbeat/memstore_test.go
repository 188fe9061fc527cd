package heartbeat_test

import (
	"testing"

	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/store/storetest"
)

func TestMemoryStoreContract(t *testing.T) {
	storetest.TestScheduleStore(t, func(t *testing.T) heartbeat.Store { return heartbeat.NewMemoryStore() })
}
