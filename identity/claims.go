package identity

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"novaos.dev/novaos/strictjson"
)

// Claim names. The Python SDK's verifier names user_id, tenant_id, run_id,
// instance_id, agent_id, agent_name and scopes; it names no conversation
// claim, so conversation_id follows the same pattern (the memory service
// scopes live conversation messages by it).
const (
	ClaimTenantID       = "tenant_id"
	ClaimUserID         = "user_id"
	ClaimRunID          = "run_id"
	ClaimInstanceID     = "instance_id"
	ClaimAgentID        = "agent_id"
	ClaimAgentName      = "agent_name"
	ClaimConversationID = "conversation_id"
	ClaimScopes         = "scopes"
	// ClaimCallID binds a token to one tool call: the token that resumes
	// a run after a person confirmed a write is good for that write only.
	ClaimCallID = "call_id"
	// ClaimLLMMaxTokens and ClaimLLMMaxCostUSD are the run's own limit
	// on its model use through the LLM gateway (a whole number of tokens,
	// a number of US dollars).
	ClaimLLMMaxTokens  = "llm_max_tokens"
	ClaimLLMMaxCostUSD = "llm_max_cost_usd"
)

// Claims are the verified contents of an execution token: who acts (the
// agent, its instance), for whom (tenant, user), in which run and
// conversation, with which scopes, and for how long.
type Claims struct {
	Issuer    string    // iss
	Subject   string    // sub; the platform's tokens carry the agent id
	Audience  []string  // aud
	Expiry    time.Time // exp
	NotBefore time.Time // nbf; zero when absent
	IssuedAt  time.Time // iat; zero when absent
	ID        string    // jti

	TenantID       string
	UserID         string
	RunID          string
	InstanceID     string
	AgentID        string
	AgentName      string
	ConversationID string
	// CallID is the tool call a resume token is bound to (call_id); empty
	// in a token that is not bound to one.
	CallID string
	Scopes []string
	// LLMMaxTokens and LLMMaxCostUSD cap the model tokens and the cost
	// the token's run may spend through the LLM gateway, in all of its
	// calls, besides the budgets the gateway is configured with (the
	// tighter applies); zero caps nothing. The platform sets them on a run
	// a schedule starts: what the schedule's daily budget has left. They
	// ride in the token so that the gateway, which verifies it on every
	// call anyway, knows them without reading the run.
	LLMMaxTokens  int64
	LLMMaxCostUSD float64
}

// HasScope reports whether any scope of the token grants required (see
// ScopeMatches for the grammar).
func (c *Claims) HasScope(required string) bool {
	return c != nil && AnyScopeMatches(c.Scopes, required)
}

// MarshalJSON writes the JWT claims set: registered claims by their RFC
// 7519 names, dates as whole seconds, an audience of one as a string,
// empty claims left out.
func (c Claims) MarshalJSON() ([]byte, error) {
	type wire struct {
		Iss            string   `json:"iss,omitempty"`
		Sub            string   `json:"sub,omitempty"`
		Aud            any      `json:"aud,omitempty"`
		Exp            *int64   `json:"exp,omitempty"`
		Nbf            *int64   `json:"nbf,omitempty"`
		Iat            *int64   `json:"iat,omitempty"`
		Jti            string   `json:"jti,omitempty"`
		TenantID       string   `json:"tenant_id,omitempty"`
		UserID         string   `json:"user_id,omitempty"`
		RunID          string   `json:"run_id,omitempty"`
		InstanceID     string   `json:"instance_id,omitempty"`
		AgentID        string   `json:"agent_id,omitempty"`
		AgentName      string   `json:"agent_name,omitempty"`
		ConversationID string   `json:"conversation_id,omitempty"`
		CallID         string   `json:"call_id,omitempty"`
		Scopes         []string `json:"scopes,omitempty"`
		LLMMaxTokens   int64    `json:"llm_max_tokens,omitempty"`
		LLMMaxCostUSD  float64  `json:"llm_max_cost_usd,omitempty"`
	}
	w := wire{
		Iss: c.Issuer, Sub: c.Subject, Jti: c.ID,
		Exp: unix(c.Expiry), Nbf: unix(c.NotBefore), Iat: unix(c.IssuedAt),
		TenantID: c.TenantID, UserID: c.UserID, RunID: c.RunID, InstanceID: c.InstanceID,
		AgentID: c.AgentID, AgentName: c.AgentName, ConversationID: c.ConversationID,
		CallID: c.CallID, Scopes: c.Scopes, LLMMaxTokens: c.LLMMaxTokens, LLMMaxCostUSD: c.LLMMaxCostUSD,
	}
	switch len(c.Audience) {
	case 0:
	case 1:
		w.Aud = c.Audience[0]
	default:
		w.Aud = c.Audience
	}
	return json.Marshal(w)
}

func unix(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	s := t.Unix()
	return &s
}

// UnmarshalJSON reads a claims set strictly: an object whose members are
// each present at most once, registered and platform claims of the right
// JSON type (aud a string or an array of strings; dates numbers of
// seconds; scopes an array of strings or one space-separated string, each
// a valid scope; llm_max_tokens a whole number and llm_max_cost_usd a
// number, neither negative). Claims it does not know are ignored.
func (c *Claims) UnmarshalJSON(data []byte) error {
	parsed, err := parseClaims(data)
	if err != nil {
		return err
	}
	*c = *parsed
	return nil
}

// parseClaims is UnmarshalJSON's work; its errors are ErrMalformed ones
// that name the claim, never its value.
func parseClaims(data []byte) (*Claims, error) {
	c := &Claims{}
	err := eachMember(data, func(name string, raw json.RawMessage) error {
		var dst *string
		switch name {
		case "iss":
			dst = &c.Issuer
		case "sub":
			dst = &c.Subject
		case "jti":
			dst = &c.ID
		case ClaimTenantID:
			dst = &c.TenantID
		case ClaimUserID:
			dst = &c.UserID
		case ClaimRunID:
			dst = &c.RunID
		case ClaimInstanceID:
			dst = &c.InstanceID
		case ClaimAgentID:
			dst = &c.AgentID
		case ClaimAgentName:
			dst = &c.AgentName
		case ClaimConversationID:
			dst = &c.ConversationID
		case ClaimCallID:
			dst = &c.CallID
		case "exp":
			return decodeDate(raw, name, &c.Expiry)
		case "nbf":
			return decodeDate(raw, name, &c.NotBefore)
		case "iat":
			return decodeDate(raw, name, &c.IssuedAt)
		case "aud":
			return decodeStrings(raw, name, &c.Audience, false)
		case ClaimLLMMaxTokens:
			n, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("claim %q is not a whole number of at least 0", name)
			}
			c.LLMMaxTokens = n
			return nil
		case ClaimLLMMaxCostUSD:
			var f float64
			if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) || json.Unmarshal(raw, &f) != nil || f < 0 {
				return fmt.Errorf("claim %q is not a number of at least 0", name)
			}
			c.LLMMaxCostUSD = f
			return nil
		case ClaimScopes:
			if err := decodeStrings(raw, name, &c.Scopes, true); err != nil {
				return err
			}
			for _, s := range c.Scopes {
				if !ValidScope(s) {
					return fmt.Errorf("claim %q holds an invalid scope", name)
				}
			}
			return nil
		default:
			return nil
		}
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, dst) != nil {
			return fmt.Errorf("claim %q is not a string", name)
		}
		return nil
	})
	if err != nil {
		return nil, invalid(ErrMalformed, "claims: %s", err)
	}
	return c, nil
}

// eachMember reads one JSON object, refusing a member named twice at any
// depth and anything after the object, and hands each member's value to
// fn. Its errors say where the document went wrong, not what it held.
func eachMember(data []byte, fn func(name string, raw json.RawMessage) error) error {
	err := strictjson.Check(data, &strictjson.Options{Object: true})
	if se, ok := errors.AsType[*strictjson.Error](err); ok {
		switch se.Problem {
		case strictjson.NotObject:
			return errors.New("not a JSON object")
		case strictjson.Duplicate:
			return errors.New("a member appears twice")
		}
	}
	var m map[string]json.RawMessage
	if err != nil || json.Unmarshal(data, &m) != nil {
		return errors.New("not valid JSON")
	}
	for name, raw := range m {
		if err := fn(name, raw); err != nil {
			return err
		}
	}
	return nil
}

// maxDate is 9999-12-31T23:59:59Z: a later date is no date anyone meant.
const maxDate = 253402300799

func decodeDate(raw json.RawMessage, name string, dst *time.Time) error {
	var f float64
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) || json.Unmarshal(raw, &f) != nil {
		return fmt.Errorf("claim %q is not a number", name)
	}
	if f < 0 || f > maxDate || math.IsNaN(f) {
		return fmt.Errorf("claim %q is out of range", name)
	}
	sec, frac := math.Modf(f)
	*dst = time.Unix(int64(sec), int64(frac*1e9)).UTC()
	return nil
}

// decodeStrings reads a string or an array of strings; a string is split
// on spaces when split is set (OAuth's space-delimited scope form).
func decodeStrings(raw json.RawMessage, name string, dst *[]string, split bool) error {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("claim %q is not a string", name)
		}
		if split {
			*dst = strings.Fields(s)
		} else {
			*dst = []string{s}
		}
		return nil
	}
	var list []string
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &list) != nil {
		return fmt.Errorf("claim %q is not a string or an array of strings", name)
	}
	*dst = list
	return nil
}
