package llmgw

import (
	"net/http"
	"strconv"

	"novaos.dev/novaos/llm"
)

// Errors on /v1 are *llm.APIError, in OpenAI's shape
// ({"error":{"message","type","param","code"}}) with the llm package's
// types and codes. A message never holds a token, a key or a prompt.

// writeError answers with e: llm.WriteError, never cached, and a 401
// names the bearer realm.
func writeError(w http.ResponseWriter, e *llm.APIError) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	if e.Status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="novaos-llm"`)
	}
	llm.WriteError(w, e)
}

func badRequest(param, code, msg string) *llm.APIError {
	return &llm.APIError{Status: http.StatusBadRequest, Message: msg, Type: llm.TypeInvalidRequest, Param: param, Code: code}
}

func unauthorized(msg string) *llm.APIError {
	return &llm.APIError{Status: http.StatusUnauthorized, Message: msg, Type: llm.TypeInvalidRequest, Code: llm.CodeInvalidAPIKey}
}

// serverError is a failure of the gateway itself; its message says what
// could not be done, the log says why.
func serverError(status int, msg string) *llm.APIError {
	return &llm.APIError{Status: status, Type: llm.TypeServer, Message: msg}
}

func modelNotFound(model string) *llm.APIError {
	return &llm.APIError{Status: http.StatusNotFound, Type: llm.TypeInvalidRequest, Param: "model", Code: llm.CodeModelNotFound,
		Message: "The model " + quoteModel(model) + " does not exist or is not served here."}
}

func modelNotAllowed(model string) *llm.APIError {
	return &llm.APIError{Status: http.StatusForbidden, Type: llm.TypePermission, Param: "model", Code: llm.CodeModelNotAllowed,
		Message: "The token does not grant the model " + quoteModel(model) + " (scope " + scopeOf(model) + ")."}
}

// quoteModel quotes a model name a caller sent, cut short.
func quoteModel(m string) string {
	if len(m) > 140 {
		m = m[:140]
	}
	return strconv.Quote(m)
}
