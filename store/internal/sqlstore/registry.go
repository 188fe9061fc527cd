package sqlstore

import (
	"encoding/json"

	"novaos.dev/novaos/registry"
)

// DecodeAgent reads a registry_agents body, the agent as JSON: for a
// single row, and for ScanBodies over a listing.
func DecodeAgent(body []byte) (*registry.Agent, error) {
	a := new(registry.Agent)
	if err := json.Unmarshal(body, a); err != nil {
		return nil, err
	}
	return a, nil
}
