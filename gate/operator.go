package gate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// ListQuery selects actions for an operator's list.
type ListQuery struct {
	// States filters by state (the server's default when empty: held and
	// unconfirmed, the ones waiting for a person).
	States []ActionState
	// Limit is the page size (0: the server's default).
	Limit int
	// After continues a listing (ActionList.Next of the previous page).
	After string
}

// The operator and admin calls return the gate's refusals as *Problem
// (wrapped; errors.As finds it), transport faults as they came, and an
// answer that fails strict decoding as an error naming it malformed.
// Reads are retried on transient faults; Decide and PutRules are not,
// since a replayed decision or rule set is a second one.

// ListActions returns a page of actions (GET /actions).
func (c *Client) ListActions(ctx context.Context, q *ListQuery) (*ActionList, error) {
	v := url.Values{}
	if q != nil {
		if len(q.States) > 0 {
			s := make([]string, len(q.States))
			for i, st := range q.States {
				s[i] = string(st)
			}
			v.Set("state", strings.Join(s, ","))
		}
		if q.Limit > 0 {
			v.Set("limit", strconv.Itoa(q.Limit))
		}
		if q.After != "" {
			v.Set("after", q.After)
		}
	}
	var out ActionList
	if err := c.operatorCall(ctx, "list actions", request{method: http.MethodGet, path: "/actions", query: v, idempotent: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Action returns one action's record (GET /actions/{session}/{action}).
func (c *Client) Action(ctx context.Context, sessionID, actionID string) (*ActionRecord, error) {
	if sessionID == "" || actionID == "" {
		return nil, errors.New("gate: action: a session id and an action id are required")
	}
	var out ActionRecord
	if err := c.operatorCall(ctx, "action", request{method: http.MethodGet, path: "/actions/" + escape(sessionID) + "/" + escape(actionID), idempotent: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Decide records an operator's decision on an action (POST
// /actions/{session}/{action}/decision) and returns the action after it.
func (c *Client) Decide(ctx context.Context, sessionID, actionID string, d OperatorDecision) (*ActionRecord, error) {
	if sessionID == "" || actionID == "" {
		return nil, errors.New("gate: decide: a session id and an action id are required")
	}
	if !d.Decision.Valid() {
		return nil, fmt.Errorf("gate: decide: %q is not approve, deny, confirm_executed or confirm_not_executed", d.Decision)
	}
	var out ActionRecord
	r := request{method: http.MethodPost, path: "/actions/" + escape(sessionID) + "/" + escape(actionID) + "/decision", body: d}
	if err := c.operatorCall(ctx, "decide", r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PutRules stores the next version of the tenant's rule set (PUT /rules).
func (c *Client) PutRules(ctx context.Context, doc RuleSetDocument) (*RuleSetInfo, error) {
	var out RuleSetInfo
	r := request{method: http.MethodPut, path: "/rules", body: doc, ok: []int{http.StatusOK, http.StatusCreated}}
	if err := c.operatorCall(ctx, "put rules", r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Rules returns a version of the tenant's rule set with its document
// (GET /rules); version 0 is the current one.
func (c *Client) Rules(ctx context.Context, version int64) (*RuleSetInfo, error) {
	v := url.Values{}
	if version > 0 {
		v.Set("version", strconv.FormatInt(version, 10))
	}
	var out RuleSetInfo
	if err := c.operatorCall(ctx, "rules", request{method: http.MethodGet, path: "/rules", query: v, idempotent: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Audit returns up to limit audit entries after seq after (GET /audit);
// limit 0 is the server's default.
func (c *Client) Audit(ctx context.Context, after int64, limit int) (*AuditPage, error) {
	v := url.Values{"after": {strconv.FormatInt(after, 10)}}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	var out AuditPage
	if err := c.operatorCall(ctx, "audit", request{method: http.MethodGet, path: "/audit", query: v, idempotent: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// auditPageSize is the page VerifyAudit asks for (the stores' maximum).
const auditPageSize = 1000

// VerifyAudit reads the whole audit chain from seq 1 and checks it with
// an AuditVerifier: an altered, removed or reordered entry is a
// *ChainError. The last page's head (AuditPage.HeadSeq, HeadHash, read
// with it) must be the last verified entry, so entries cut from the end
// of the chain are caught too. It returns how many entries verified and
// the hash of the last (AuditGenesis for an empty chain).
func (c *Client) VerifyAudit(ctx context.Context) (verified int64, head string, err error) {
	ver := NewAuditVerifier()
	var after int64
	for {
		page, err := c.Audit(ctx, after, auditPageSize)
		if err != nil {
			return ver.Verified(), ver.Head(), err
		}
		for _, e := range page.Entries {
			if err := ver.Add(e); err != nil {
				return ver.Verified(), ver.Head(), err
			}
		}
		after = ver.Verified()
		if len(page.Entries) > 0 && after < page.HeadSeq {
			continue
		}
		switch {
		case after < page.HeadSeq:
			return after, ver.Head(), &ChainError{Seq: after + 1, Detail: fmt.Sprintf("the head is at seq %d but the chain ends at %d (entries removed)", page.HeadSeq, after)}
		case after > page.HeadSeq:
			return after, ver.Head(), &ChainError{Seq: page.HeadSeq, Detail: fmt.Sprintf("the chain runs to seq %d past its head at %d", after, page.HeadSeq)}
		case ver.Head() != page.HeadHash:
			return after, ver.Head(), &ChainError{Seq: after, Detail: "the head hash does not name the last entry"}
		}
		return after, ver.Head(), nil
	}
}

// operatorCall sends r with the client's tenant and decodes the answer
// strictly into out.
func (c *Client) operatorCall(ctx context.Context, what string, r request, out any) error {
	if c.tenant != "" {
		if r.query == nil {
			r.query = url.Values{}
		}
		r.query.Set("tenant", c.tenant)
	}
	data, err := c.call(ctx, r)
	if err == nil {
		err = decodeAnswer(data, out)
	}
	if err != nil {
		return fmt.Errorf("gate: %s: %w", what, err)
	}
	return nil
}
