package memory_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/memory"
)

func ptr[T any](v T) *T { return &v }

func TestValidate(t *testing.T) {
	long := strings.Repeat("x", memory.MaxContentBytes+1)
	tags21 := make([]string, 21)
	for i := range tags21 {
		tags21[i] = "t"
	}
	now := time.Now()
	tests := []struct {
		name  string
		req   interface{ Validate() error }
		field string // "" means valid
	}{
		{"write ok", &memory.WriteRequest{Scope: "agent", Content: "User prefers tea", MemoryType: "episodic"}, ""},
		{"write max content", &memory.WriteRequest{Scope: "run", Content: long[:memory.MaxContentBytes]}, ""},
		{"write content too long", &memory.WriteRequest{Scope: "run", Content: long}, "content"},
		{"write blank content", &memory.WriteRequest{Scope: "run", Content: "  "}, "content"},
		{"write bad scope", &memory.WriteRequest{Scope: "platform", Content: "x"}, "scope"},
		{"write unknown type", &memory.WriteRequest{Scope: "agent", Content: "x", MemoryType: "factual"}, "memory_type"},
		{"write metadata type", &memory.WriteRequest{Scope: "agent", Content: "x", Metadata: &memory.WriteMetadata{MemoryType: "other"}}, "metadata.memory_type"},
		{"write types disagree", &memory.WriteRequest{Scope: "agent", Content: "x", MemoryType: "semantic", Metadata: &memory.WriteMetadata{MemoryType: "episodic"}}, "metadata.memory_type"},
		{"write too many tags", &memory.WriteRequest{Scope: "agent", Content: "x", Metadata: &memory.WriteMetadata{Tags: tags21}}, "metadata.tags"},
		{"write long tag", &memory.WriteRequest{Scope: "agent", Content: "x", Metadata: &memory.WriteMetadata{Tags: []string{strings.Repeat("é", 65)}}}, "metadata.tags[0]"},
		{"write confidence", &memory.WriteRequest{Scope: "agent", Content: "x", Metadata: &memory.WriteMetadata{Confidence: ptr(1.5)}}, "metadata.confidence"},
		{"write ttl", &memory.WriteRequest{Scope: "run", Content: "x", TTLSeconds: ptr(int64(0))}, "ttl_seconds"},
		{"write classification", &memory.WriteRequest{Scope: "run", Content: "x", Classification: "secret"}, "classification"},
		{"write NUL", &memory.WriteRequest{Scope: "run", Content: "a\x00b"}, "content"},
		{"query ok", &memory.QueryRequest{Scope: "user", Query: "tea", TopK: ptr(100)}, ""},
		{"query top_k", &memory.QueryRequest{Scope: "user", Query: "tea", TopK: ptr(101)}, "top_k"},
		{"query budget top_k", &memory.QueryRequest{Scope: "user", Query: "tea", Budget: &memory.Budget{TopK: ptr(0)}}, "budget.top_k"},
		{"query type", &memory.QueryRequest{Scope: "user", Query: "tea", MemoryType: "x"}, "memory_type"},
		{"query filter type", &memory.QueryRequest{Scope: "user", Query: "tea", Filters: &memory.Filters{MemoryType: "x"}}, "filters.memory_type"},
		{"query after before", &memory.QueryRequest{Scope: "user", Query: "tea", Filters: &memory.Filters{After: &now, Before: &now}}, "filters.after"},
		{"update ok", &memory.UpdateRequest{Scope: "agent", MemoryID: "m1", Version: 1, Content: ptr("new")}, ""},
		{"update nothing", &memory.UpdateRequest{Scope: "agent", MemoryID: "m1", Version: 1}, "content"},
		{"update proposal id", &memory.UpdateRequest{Scope: "agent", MemoryID: "prop_1", Version: 1, Content: ptr("x")}, "memory_id"},
		{"update version", &memory.UpdateRequest{Scope: "agent", MemoryID: "m1", Version: 0, Content: ptr("x")}, "version"},
		{"update tags only", &memory.UpdateRequest{Scope: "agent", MemoryID: "m1", Version: 2, Metadata: &memory.UpdateMetadata{Tags: []string{}}}, ""},
		{"forget ok", &memory.ForgetRequest{Scope: "run", MemoryID: "m1", Reason: "superseded"}, ""},
		{"forget 500 chars", &memory.ForgetRequest{Scope: "run", MemoryID: "m1", Reason: strings.Repeat("é", 500)}, ""},
		{"forget 501 chars", &memory.ForgetRequest{Scope: "run", MemoryID: "m1", Reason: strings.Repeat("é", 501)}, "reason"},
		{"forget empty reason", &memory.ForgetRequest{Scope: "run", MemoryID: "m1"}, "reason"},
		{"forget proposal", &memory.ForgetRequest{Scope: "agent", MemoryID: "prop_abc", Reason: "x"}, "memory_id"},
		{"hint ok", &memory.HintRequest{Hint: "likes tea", ConversationID: "c1"}, ""},
		{"hint no conversation", &memory.HintRequest{Hint: "likes tea"}, "conversation_id"},
		{"hint too long", &memory.HintRequest{Hint: strings.Repeat("x", memory.MaxHintBytes+1), ConversationID: "c1"}, "hint"},
		{"hint priority", &memory.HintRequest{Hint: "x", ConversationID: "c1", Priority: "urgent"}, "priority"},
		{"assemble ok", &memory.AssembleRequest{Query: "x", LiveMessageLimit: ptr(100)}, ""},
		{"assemble live 0", &memory.AssembleRequest{Query: "x", LiveMessageLimit: ptr(0)}, "live_message_limit"},
		{"assemble live 101", &memory.AssembleRequest{Query: "x", LiveMessageLimit: ptr(101)}, "live_message_limit"},
		{"assemble type", &memory.AssembleRequest{Query: "x", MemoryType: "Semantic"}, "memory_type"},
		{"assemble latency", &memory.AssembleRequest{Query: "x", LatencyBudgetMS: ptr(0)}, "latency_budget_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var ve *memory.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate = %v, want a *ValidationError for %s", err, tt.field)
			}
			if ve.Field != tt.field || ve.Rule == "" {
				t.Errorf("field %q rule %q, want field %q and a rule", ve.Field, ve.Rule, tt.field)
			}
			if !errors.Is(err, memory.ErrInvalid) {
				t.Error("not errors.Is ErrInvalid")
			}
		})
	}
}

func TestValidationErrorNeverQuotesTheValue(t *testing.T) {
	secret := "sk-live-0123456789abcdef"
	reqs := []interface{ Validate() error }{
		&memory.WriteRequest{Scope: "run", Content: secret + strings.Repeat("x", memory.MaxContentBytes)},
		&memory.WriteRequest{Scope: memory.Scope(secret), Content: "x"},
		&memory.ForgetRequest{Scope: "run", MemoryID: secret + " x", Reason: "r"},
		&memory.WriteRequest{Scope: "run", Content: "x", MemoryType: memory.Type(secret)},
	}
	for _, r := range reqs {
		err := r.Validate()
		if err == nil {
			t.Fatal("Validate accepted a bad request")
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q quotes the value", err)
		}
	}
}

func TestParseType(t *testing.T) {
	for _, s := range []string{"", "semantic", "episodic", "procedural"} {
		if got, err := memory.ParseType(s); err != nil || string(got) != s {
			t.Errorf("ParseType(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := memory.ParseType("fact"); err == nil || !strings.Contains(err.Error(), "memory_type") {
		t.Errorf("ParseType(fact) = %v, want an error naming memory_type", err)
	}
}

func TestQueryLimit(t *testing.T) {
	tests := []struct {
		req  memory.QueryRequest
		want int
	}{
		{memory.QueryRequest{}, memory.DefaultTopK},
		{memory.QueryRequest{TopK: ptr(5)}, 5},
		{memory.QueryRequest{Budget: &memory.Budget{TopK: ptr(7)}}, 7},
		{memory.QueryRequest{TopK: ptr(3), Budget: &memory.Budget{TopK: ptr(7)}}, 3},
	}
	for _, tt := range tests {
		if got := tt.req.Limit(); got != tt.want {
			t.Errorf("Limit() = %d, want %d", got, tt.want)
		}
	}
}
