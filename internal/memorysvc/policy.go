package memorysvc

import (
	"novaos.dev/novaos/memory"
)

// The scope policy of the NovaOS memory guide, in one place:
//
//	scope   read needs           write needs            who owns it
//	run     memory:read:run      memory:write:run       the token's run
//	task    memory:read:task     memory:write:task      the token's run (tokens name no task)
//	agent   memory:read:agent    memory:write:agent     the token's agent; writes are proposals
//	user    memory:read:user     never (422): hints     the token's user
//	tenant  memory:read:tenant   memory:write:tenant    the tenant; writes by memory:admin only
//	                             and memory:admin
//
// A missing token scope is 403; the service's own refusal, even with the
// scope, is 422. Update is for agent scope only (and tenant for an
// administrator): any other scope, and tenant for anyone else, is 422
// before the token's scopes are looked at. Forget is for run, task and agent (and tenant for an
// administrator).

// partition is the part of scope c owns.
func (c *Caller) partition(scope memory.Scope) (memory.Partition, error) {
	p := memory.Partition{Scope: scope}
	switch scope {
	case memory.ScopeRun, memory.ScopeTask:
		p.Owner = c.Run
	case memory.ScopeAgent:
		p.Owner = c.Agent
	case memory.ScopeUser:
		p.Owner = c.User
	case memory.ScopeTenant:
		return p, nil
	}
	if p.Owner == "" {
		return p, policy("scope", "the token names no "+ownerClaim(scope)+" for "+string(scope)+" memory")
	}
	return p, nil
}

func ownerClaim(scope memory.Scope) string {
	switch scope {
	case memory.ScopeAgent:
		return "agent"
	case memory.ScopeUser:
		return "user"
	}
	return "run"
}

// readable is the partition of scope c may read.
func (c *Caller) readable(scope memory.Scope) (memory.Partition, error) {
	if need := ScopeReadPrefix + string(scope); !c.grants(need) {
		return memory.Partition{}, forbidden(need)
	}
	return c.partition(scope)
}

// op is what a write-side call does to a scope.
type op int

const (
	opWrite op = iota
	opUpdate
	opForget
)

// writable is the partition of scope c may change with o.
func (c *Caller) writable(scope memory.Scope, o op) (memory.Partition, error) {
	if o == opUpdate && scope != memory.ScopeAgent && (scope != memory.ScopeTenant || !c.grants(ScopeAdmin)) {
		// A scope the caller may never update is the service's refusal
		// (422) whatever the token grants, as the memory guide's update
		// says: "422 for a scope that cannot be updated"; user and tenant
		// "are refused (422) for agent principals".
		return memory.Partition{}, policy("scope", "only agent memory is updated in place (tenant memory by administrators); forget a scratch memory and write a new one")
	}
	if need := ScopeWritePrefix + string(scope); !c.grants(need) {
		return memory.Partition{}, forbidden(need)
	}
	switch {
	case scope == memory.ScopeUser:
		return memory.Partition{}, policy("scope", "user memory is written by consolidation only: submit a hint")
	case scope == memory.ScopeTenant && !c.grants(ScopeAdmin):
		return memory.Partition{}, policy("scope", "tenant memory is changed by administrators only")
	}
	return c.partition(scope)
}
