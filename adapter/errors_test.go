package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/delivery"
)

// clientAllSentinels lists every sentinel of errors.go.
var clientAllSentinels = []error{
	ErrValidationFailed, ErrUseDPoPNonce, ErrInvocationTokenInvalid, ErrAgentInvocationDenied, ErrAlreadyStarted,
	ErrBillingModeMismatch, ErrToolClassMismatch, ErrBaseVersionConflict, ErrVersionConflict, ErrRequestInProgress,
	ErrIdempotencyKeyReused, ErrSetupRequired, ErrUnavailable, ErrRunNotActive, ErrRunInactive,
	ErrBadRequest, ErrUnauthenticated, ErrForbidden, ErrNotFound, ErrConflict, ErrGone, ErrPreconditionFailed,
	ErrPayloadTooLarge, ErrRateLimited, ErrServer, ErrMalformedResponse,
}

func clientProblemBody(status int, code, reason string) []byte {
	b, _ := json.Marshal(delivery.Problem{Title: "t", Status: status, Code: code, Reason: reason})
	return b
}

func TestClientProblemErrorsMatchTheirSentinels(t *testing.T) {
	cases := []struct {
		status int
		code   string
		reason string
		want   []error // every sentinel that matches; all others must not
	}{
		{400, delivery.CodeValidationFailed, "", []error{ErrValidationFailed, ErrBadRequest}},
		{401, delivery.CodeUnauthenticated, "", []error{ErrUnauthenticated}},
		{401, delivery.CodeUseDPoPNonce, "", []error{ErrUseDPoPNonce, ErrUnauthenticated}},
		{403, delivery.CodeForbidden, "", []error{ErrForbidden}},
		{403, delivery.CodeInvocationTokenInvalid, delivery.TokenExpired, []error{ErrInvocationTokenInvalid, ErrForbidden}},
		{403, delivery.CodeInvocationTokenInvalid, delivery.TokenSuperseded, []error{ErrInvocationTokenInvalid, ErrForbidden}},
		{403, delivery.CodeInvocationTokenInvalid, delivery.TokenInvalid, []error{ErrInvocationTokenInvalid, ErrForbidden}},
		{403, delivery.CodeInvocationTokenInvalid, delivery.RunInactive, []error{ErrInvocationTokenInvalid, ErrRunInactive, ErrForbidden}},
		{403, delivery.CodeAgentInvocationDenied, "", []error{ErrAgentInvocationDenied, ErrForbidden}},
		{404, delivery.CodeNotFound, "", []error{ErrNotFound}},
		{409, delivery.CodeAlreadyStarted, "", []error{ErrAlreadyStarted, ErrConflict}},
		{409, delivery.CodeBillingModeMismatch, "", []error{ErrBillingModeMismatch, ErrConflict}},
		{409, delivery.CodeToolClassMismatch, "", []error{ErrToolClassMismatch, ErrConflict}},
		{409, delivery.CodeBaseVersionConflict, "", []error{ErrBaseVersionConflict, ErrConflict}},
		{409, delivery.CodeConflict, delivery.RunNotActive, []error{ErrRunNotActive, ErrConflict}},
		{409, delivery.CodeConflict, "", []error{ErrConflict}},
		{409, delivery.CodeVersionConflict, "", []error{ErrVersionConflict, ErrConflict}},
		{409, delivery.CodeRequestInProgress, "", []error{ErrRequestInProgress, ErrConflict}},
		{422, delivery.CodeIdempotencyKeyReused, "", []error{ErrIdempotencyKeyReused}},
		{410, delivery.CodeGone, "", []error{ErrGone}},
		{412, delivery.CodePreconditionFailed, "", []error{ErrPreconditionFailed}},
		{413, delivery.CodePayloadTooLarge, "", []error{ErrPayloadTooLarge}},
		{429, delivery.CodeRateLimited, "", []error{ErrRateLimited}},
		{500, delivery.CodeInternal, "", []error{ErrServer}},
		{503, delivery.CodeSetupRequired, "", []error{ErrSetupRequired, ErrServer}},
		{503, delivery.CodeUnavailable, "", []error{ErrUnavailable, ErrServer}},
		// Unknown codes go by their status.
		{400, "brand_new_code", "", []error{ErrBadRequest}},
		{401, "brand_new_code", "", []error{ErrUnauthenticated}},
		{403, "brand_new_code", "", []error{ErrForbidden}},
		{404, "brand_new_code", "", []error{ErrNotFound}},
		{409, "brand_new_code", "", []error{ErrConflict}},
		{410, "brand_new_code", "", []error{ErrGone}},
		{412, "brand_new_code", "", []error{ErrPreconditionFailed}},
		{429, "brand_new_code", "", []error{ErrRateLimited}},
		{502, "brand_new_code", "", []error{ErrServer}},
		{599, "", "", []error{ErrServer}},
		{418, "brand_new_code", "", nil},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d %s %s", tc.status, tc.code, tc.reason), func(t *testing.T) {
			e := clientReadProblem("op", tc.status, http.Header{}, clientProblemBody(tc.status, tc.code, tc.reason), time.Now())
			var err error = fmt.Errorf("wrapped: %w", e)
			for _, s := range clientAllSentinels {
				want := false
				for _, w := range tc.want {
					if w == s {
						want = true
					}
				}
				if got := errors.Is(err, s); got != want {
					t.Errorf("errors.Is(%v, %v) = %v, want %v", e, s, got, want)
				}
			}
			var pe *ProblemError
			if !errors.As(err, &pe) || pe.Code() != tc.code || pe.Reason() != tc.reason || pe.HTTPStatus() != tc.status {
				t.Fatalf("As: %+v", pe)
			}
		})
	}
}

// Every code the wire contract defines is covered by the table above
// through a real call, too: the client hands the server's problem on.
func TestClientEveryCodeThroughACall(t *testing.T) {
	codes := map[string]int{
		delivery.CodeValidationFailed: 400, delivery.CodeUnauthenticated: 401, delivery.CodeForbidden: 403,
		delivery.CodeInvocationTokenInvalid: 403, delivery.CodeAgentInvocationDenied: 403, delivery.CodeNotFound: 404,
		delivery.CodeAlreadyStarted: 409, delivery.CodeBillingModeMismatch: 409, delivery.CodeToolClassMismatch: 409,
		delivery.CodeBaseVersionConflict: 409, delivery.CodeConflict: 409, delivery.CodeVersionConflict: 409,
		delivery.CodeIdempotencyKeyReused: 422, delivery.CodeGone: 410, delivery.CodePreconditionFailed: 412,
		delivery.CodePayloadTooLarge: 413, delivery.CodeSetupRequired: 503,
	}
	for code, status := range codes {
		srv := newClientTestServer(t, nil, nil, func(w http.ResponseWriter, r *http.Request, n int, seen clientSeen) {
			clientWriteProblem(w, status, code, "why")
		})
		c := newClientForTest(t, srv.URL, clientBearer(), nil)
		_, err := c.FinishRun(context.Background(), "r1", delivery.RunFinish{State: delivery.RunFailed})
		var pe *ProblemError
		if !errors.As(err, &pe) || pe.Status != status || pe.Code() != code || pe.Reason() != "why" ||
			pe.Operation != "finishRun" || pe.Problem.CorrelationID != "corr-1" {
			t.Errorf("%s: error %v (%+v)", code, err, pe)
		}
	}
}

func TestClientProblemErrorText(t *testing.T) {
	body := []byte(`{"title":"Forbidden","status":403,"code":"invocation_token_invalid","reason":"superseded",` +
		`"detail":"a newer token was delivered","correlation_id":"c-42"}`)
	e := clientReadProblem("startRun", 403, http.Header{}, body, time.Now())
	want := "adapter: startRun: 403 invocation_token_invalid (superseded): a newer token was delivered [correlation_id c-42]"
	if e.Error() != want {
		t.Fatalf("Error() = %q, want %q", e.Error(), want)
	}
	partial := clientReadProblem("finishRun", 409, http.Header{}, []byte(`{"code":"already_started","errors":"not a list"}`), time.Now())
	if !errors.Is(partial, ErrAlreadyStarted) {
		t.Fatalf("a member of an unexpected type lost the code: %+v", partial.Problem)
	}
	bare := clientReadProblem("getRun", 502, http.Header{}, []byte("<html>bad gateway</html>"), time.Now())
	if bare.Error() != "adapter: getRun: 502 Bad Gateway" || bare.Problem.Title != "Bad Gateway" || bare.Problem.Status != 502 {
		t.Fatalf("a body that is no problem: %q %+v", bare.Error(), bare.Problem)
	}
}

func TestClientProblemRetryAfter(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		header string
		body   string
		want   time.Duration
	}{
		{"5", `{}`, 5 * time.Second},
		{now.Add(90 * time.Second).Format(http.TimeFormat), `{}`, 90 * time.Second},
		{"", `{"retry_after":12}`, 12 * time.Second},
		{"3", `{"retry_after":12}`, 3 * time.Second},
		{"garbage", `{}`, 0},
		{"", `{"retry_after":-4}`, 0},
	}
	for _, tc := range cases {
		h := http.Header{}
		if tc.header != "" {
			h.Set("Retry-After", tc.header)
		}
		if got := clientReadProblem("op", 429, h, []byte(tc.body), now).RetryAfter; got != tc.want {
			t.Errorf("Retry-After %q body %s: %v, want %v", tc.header, tc.body, got, tc.want)
		}
	}
}

func TestClientCurrentRun(t *testing.T) {
	body, _ := json.Marshal(map[string]any{"status": 409, "code": delivery.CodeBaseVersionConflict, "title": "Conflict",
		"current": delivery.Run{ID: "r1", Version: 7, State: delivery.RunRunning, Progress: delivery.Progress{StatusLine: "thinking"}}})
	e := clientReadProblem("patchRun", 409, http.Header{}, body, time.Now())
	run, ok := e.CurrentRun()
	if !ok || run.ID != "r1" || run.Version != 7 || run.StatusLine != "thinking" {
		t.Fatalf("CurrentRun = %+v, %v", run, ok)
	}
	for _, b := range []string{`{"code":"base_version_conflict"}`, `{"current":"not a run"}`, `{"current":{}}`} {
		if _, ok := clientReadProblem("patchRun", 409, http.Header{}, []byte(b), time.Now()).CurrentRun(); ok {
			t.Errorf("%s: CurrentRun found a run", b)
		}
	}
}

func TestClientProblemRedactsAndClips(t *testing.T) {
	body, _ := json.Marshal(map[string]any{
		"status": 401, "code": "unauthenticated", "title": "token " + clientTestToken + " refused",
		"detail":  strings.Repeat("long ", 1000) + clientTestInvToken,
		"errors":  []delivery.FieldError{{Code: "x", Pointer: "/a", Detail: "echo " + clientTestInvToken}},
		"current": map[string]string{"id": "r1", "leak": clientTestToken},
	})
	e := clientReadProblem("getRun", 401, http.Header{}, body, time.Now(), clientTestToken, clientTestInvToken)
	all := fmt.Sprintf("%v %+v %#v %s %s", e, e, e, e.Error(), e.Problem.Errors[0].Detail)
	for _, tok := range []string{clientTestToken, clientTestInvToken} {
		if strings.Contains(all, tok) {
			t.Fatalf("a refusal shows the token %s", clientFingerprint(tok))
		}
	}
	if !strings.Contains(e.Problem.Title, "[REDACTED]") || len(e.Problem.Detail) > clientMaxProblemText+len("…") {
		t.Fatalf("title %q, detail of %d bytes", e.Problem.Title, len(e.Problem.Detail))
	}
	if e.Problem.Current != nil {
		t.Fatal("a current member holding a token was kept")
	}
}

// FuzzClientProblemDecode feeds the problem decoder anything a server
// (or a proxy in front of it) may answer: it must not panic, must keep
// its text bounded and must never show the request's token.
func FuzzClientProblemDecode(f *testing.F) {
	f.Add(409, []byte(`{"status":409,"code":"base_version_conflict","current":{"id":"r1","version":3}}`))
	f.Add(403, []byte(`{"code":"invocation_token_invalid","reason":"expired","detail":"`+clientTestInvToken+`"}`))
	f.Add(401, []byte(`{"title":"\u006ev_agent_token_7f3a9c1e5b2d4f6a8c0e","errors":[{"code":"x","pointer":"/ops/0"}]}`))
	f.Add(502, []byte(`<html>bad gateway</html>`))
	f.Add(429, []byte(`{"retry_after":99999999999}`))
	f.Add(400, []byte(`{"errors":[`+strings.Repeat(`{"code":"c","pointer":"/p"},`, 60)+`{}]}`))
	f.Add(500, []byte{0xff, 0xfe, '{'})
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		status = 100 + (status%500+500)%500
		h := http.Header{}
		h.Set("Retry-After", string(body[:min(len(body), 12)]))
		e := clientReadProblem("getRun", status, h, body, time.Now(), clientTestToken, clientTestInvToken)
		msg := e.Error()
		if strings.Contains(msg, clientTestToken) || strings.Contains(msg, clientTestInvToken) {
			t.Fatalf("Error() shows a token")
		}
		if len(msg) > 4*clientMaxProblemText {
			t.Fatalf("Error() is %d bytes", len(msg))
		}
		if len(e.Problem.Errors) > clientMaxFieldErrors || e.RetryAfter < 0 {
			t.Fatalf("%d field errors, RetryAfter %v", len(e.Problem.Errors), e.RetryAfter)
		}
		for _, s := range clientAllSentinels {
			_ = errors.Is(e, s)
		}
		_, _ = e.CurrentRun()
		_ = IsTransient(e)
	})
}
