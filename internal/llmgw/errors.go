package llmgw

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// OpenAI's error types and the codes the gateway answers with.
const (
	typeInvalidRequest = "invalid_request_error"
	typePermission     = "permission_error"
	typeNotFound       = "not_found_error"
	typeQuota          = "insufficient_quota"
	typeRateLimit      = "rate_limit_error"
	typeServer         = "server_error"

	codeInvalidAPIKey   = "invalid_api_key"
	codeModelNotAllowed = "model_not_allowed"
	codeModelNotFound   = "model_not_found"
	codeBudgetExceeded  = "budget_exceeded"
	codeTooLarge        = "request_too_large"
	codeUnsupportedType = "unsupported_media_type"
	codeInvalidJSON     = "invalid_json"
	codeInvalidValue    = "invalid_value"
	codeMissing         = "missing_required_parameter"
	codeRateLimited     = "rate_limit_exceeded"
	codeUnavailable     = "provider_unavailable"
	codeOverloaded      = "overloaded"
)

// apiError is an answer in OpenAI's error shape:
// {"error":{"message","type","param","code"}}. Its message never holds a
// token, a key or a prompt.
type apiError struct {
	Status  int
	Message string
	Type    string
	Param   string // "" is null
	Code    string // "" is null
	// RetryAfter, when set, is sent as the Retry-After header (seconds).
	RetryAfter int
}

func (e *apiError) Error() string { return e.Message }

// errorBody is the JSON of an apiError.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (e *apiError) body() []byte {
	b, _ := json.Marshal(errorBody{Error: errorDetail{Message: e.Message, Type: e.Type, Param: optional(e.Param), Code: optional(e.Code)}})
	return b
}

// writeError answers with e.
func writeError(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if e.Status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="novaos-llm"`)
	}
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	b := e.body()
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(e.Status)
	_, _ = w.Write(b)
}

func badRequest(param, code, msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Message: msg, Type: typeInvalidRequest, Param: param, Code: code}
}

func unauthorized(msg string) *apiError {
	return &apiError{Status: http.StatusUnauthorized, Message: msg, Type: typeInvalidRequest, Code: codeInvalidAPIKey}
}

func modelNotFound(model string) *apiError {
	return &apiError{Status: http.StatusNotFound, Type: typeInvalidRequest, Param: "model", Code: codeModelNotFound,
		Message: "The model " + quoteModel(model) + " does not exist or is not served here."}
}

func modelNotAllowed(model string) *apiError {
	return &apiError{Status: http.StatusForbidden, Type: typePermission, Param: "model", Code: codeModelNotAllowed,
		Message: "The token does not grant the model " + quoteModel(model) + " (scope " + scopeOf(model) + ")."}
}

// quoteModel quotes a model name a caller sent, cut short.
func quoteModel(m string) string {
	if len(m) > 140 {
		m = m[:140]
	}
	return strconv.Quote(m)
}
