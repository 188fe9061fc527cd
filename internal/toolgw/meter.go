package toolgw

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// meter counts calls per tenant, agent, tool, run and outcome, with the
// bytes they moved and the time they took, since the process started.
// Each call is also an entry in the gate's audit chain, the durable
// record these counts can be rebuilt from.
type meter struct {
	mu sync.Mutex
	m  map[meterKey]*Usage
}

type meterKey struct{ tenant, agent, tool, run, outcome string }

// Usage is what the meter counted for one tenant, agent, tool, run and
// outcome.
type Usage struct {
	Tenant      string `json:"tenant_id"`
	Agent       string `json:"agent_id,omitempty"`
	Tool        string `json:"tool"`
	Run         string `json:"run_id,omitempty"`
	Outcome     string `json:"outcome"`
	Calls       int64  `json:"calls"`
	ArgBytes    int64  `json:"argument_bytes"`
	ResultBytes int64  `json:"result_bytes"`
	Micros      int64  `json:"duration_us"`
}

// maxMeterKeys bounds the meter: past it, counts by run are folded into
// one row per tenant, agent, tool and outcome.
const maxMeterKeys = 100_000

func newMeter() *meter { return &meter{m: map[meterKey]*Usage{}} }

func (m *meter) add(c *Caller, tool, outcome string, args, result int64, took time.Duration) {
	k := meterKey{c.Tenant, c.Agent, tool, c.Run, outcome}
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.m[k]
	if !ok {
		if len(m.m) >= maxMeterKeys {
			k.run = ""
			u = m.m[k]
		}
		if u == nil {
			u = &Usage{Tenant: k.tenant, Agent: k.agent, Tool: k.tool, Run: k.run, Outcome: k.outcome}
			m.m[k] = u
		}
	}
	u.Calls++
	u.ArgBytes += args
	u.ResultBytes += result
	u.Micros += took.Microseconds()
}

// usage returns the tenant's counts, ordered by tool, agent, run and
// outcome.
func (m *meter) usage(tenant string) []Usage {
	m.mu.Lock()
	out := []Usage{}
	for k, u := range m.m {
		if k.tenant == tenant {
			out = append(out, *u)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Usage) int {
		return strings.Compare(a.Tool+"\x00"+a.Agent+"\x00"+a.Run+"\x00"+a.Outcome, b.Tool+"\x00"+b.Agent+"\x00"+b.Run+"\x00"+b.Outcome)
	})
	return out
}
